import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { CreatedApp } from '../../src/apps/service.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { OPERATOR } from '../../src/request-context.js';
import type { TestBrowser } from './browser.js';
import { appOn, type AppEndpoint } from './http.js';
import type { TestServer } from './server.js';

/** A password the portal's rules accept. */
export const PASSWORD = 'correct horse battery staple';

/** A developer account made by the operator, with a password. */
export async function createDeveloper(server: TestServer, email: string): Promise<{ email: string; id: string }> {
  const created = await server.tessera.developers.create(email, PASSWORD, OPERATOR);
  return { email, id: created.developer.id };
}

/** The token of a one-time link (`/portal/…?token=…`). */
export function linkTokenOf(link: string): string {
  const token = new URL(link, 'http://portal').searchParams.get('token');
  if (token === null) throw new Error(`no token in ${link}`);
  return token;
}

/** Makes a developer a collaborator of an app: the operator invites them, and they accept. */
export async function addCollaborator(server: TestServer, appId: string, email: string): Promise<void> {
  const invitation = await server.tessera.members.invite(appId, email, OPERATOR);
  const developer = await server.tessera.developers.find(email);
  await server.tessera.members.acceptInvitation(linkTokenOf(invitation.path), developer, {
    clientAddress: null,
    by: { kind: 'developer', developerId: developer.id },
  });
}

/** A new app owned by `owner`, with `collaborator` invited and accepted. */
export async function createSharedApp(
  server: TestServer,
  name: string,
  owner: string,
  collaborator: string,
): Promise<CreatedApp & AppEndpoint> {
  const created = await server.tessera.ownedApps.create(name, owner, OPERATOR);
  await addCollaborator(server, created.appId, collaborator);
  return appOn(server, created);
}

/** Signs in through the sign-in form, as a person does. */
export async function signIn(page: Page, server: TestServer, email: string, password = PASSWORD): Promise<void> {
  await page.goto(`${server.baseUrl}/portal/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await follow(page, () => page.getByRole('button', { name: 'Sign in' }).click());
}

/** A new tab of the browser, signed in as `email`. */
export async function signedInPage(browser: TestBrowser, server: TestServer, email: string): Promise<Page> {
  const page = await browser.newPage();
  await signIn(page, server, email);
  return page;
}

/** Clicks a link or submits a form, and waits for the page it leads to, its `autofocus` applied. */
export async function follow(page: Page, click: () => Promise<void>): Promise<void> {
  await Promise.all([page.waitForEvent('framenavigated'), click()]);
  await page.waitForLoadState('load');
  await autofocusApplied(page);
}

/**
 * Waits until a new page's `autofocus` field has the focus. Chromium gives it at a rendering
 * update, which may come after `load`: a key pressed before then lands elsewhere (about one page
 * in 200 here, more on a busy machine).
 */
export async function autofocusApplied(page: Page): Promise<void> {
  await page.waitForFunction(`document.querySelector('[autofocus]') === null || document.activeElement !== document.body`);
}

/**
 * Saves a screenshot of the page for docs/portal.md, when the run is asked to
 * (`UPDATE_SCREENSHOTS=1 npm test`), so that an ordinary run leaves the checkout as it was.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  const folder = join(PACKAGE_ROOT, 'docs', 'portal');
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: join(folder, `${name}.png`), fullPage: true });
}

/** The width of the phone the portal's screenshots show (a common one: an iPhone's 390 CSS pixels). */
export const PHONE_WIDTH = 390;

/** `screenshot`, and the same page at a phone's width (`NAME-phone`). */
export async function screenshots(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  const size = page.viewportSize();
  await page.setViewportSize({ width: PHONE_WIDTH, height: 800 });
  await screenshot(page, `${name}-phone`);
  if (size !== null) await page.setViewportSize(size);
}

/** The app's tabs that do not show whole within `width` on one line; a row of tabs more than three columns need (two, or three for an owner's seven), if any. */
export async function tabsCutOrBroken(page: Page, width: number): Promise<string[]> {
  const tabs = await page.locator('nav.tabs a').evaluateAll((links) => {
    // The lines of a link's text: a range over it has a box per line.
    const lineCount = (link: (typeof links)[number]) => {
      const range = link.ownerDocument.createRange();
      range.selectNodeContents(link);
      return range.getClientRects().length;
    };
    return links.map((link) => {
      const box = link.getBoundingClientRect();
      return { name: link.textContent ?? '', left: box.left, right: box.right, top: Math.round(box.top), lines: lineCount(link) };
    });
  });
  const problems = tabs
    .filter((tab) => tab.left < 0 || tab.right > width || tab.lines !== 1)
    .map((tab) => `${tab.name}: ${Math.round(tab.left)} to ${Math.round(tab.right)}, ${tab.lines} boxes`);
  const rows = new Set(tabs.map((tab) => tab.top)).size;
  return rows > Math.max(2, Math.ceil(tabs.length / 3)) ? [...problems, `${rows} rows`] : problems;
}
