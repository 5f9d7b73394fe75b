import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { createDeveloper, follow, screenshots, signedInPage } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';

// The quickstarts in Chromium, as a web developer uses them: the web page copied from the portal,
// served from an origin of its own, refused by CORS until that origin is added with the form beside
// the snippet, then working; from the new-app page (which keeps its ClientSecret in sight all along)
// and from the overview. And every snippet read whole at a phone's width and a desktop's.

const browser = browserForSuite();
const server = serverForSuite();

/** What the web page snippet shows once its call is done (`#who`). */
async function whoShown(page: Page): Promise<string> {
  await page.waitForFunction(`document.querySelector('#who').textContent !== '…'`);
  return (await page.locator('#who').textContent()) ?? '';
}

/** The web page opened (again), with what its console says on the way. */
async function reloadWatching(page: Page): Promise<{ who: string; console: string[] }> {
  const messages: string[] = [];
  const listener = (message: { text(): string }) => messages.push(message.text());
  page.on('console', listener);
  await page.reload();
  const who = await whoShown(page);
  page.off('console', listener);
  return { who, console: messages };
}

/** Adds `origin` with the quickstarts' form, as a person does (the portal's script sends it in place), and waits for the answer. */
async function addOrigin(portal: Page, origin: string): Promise<string> {
  await portal.getByLabel("Your page's origin").fill(origin);
  await portal.getByRole('button', { name: 'Allow this origin' }).click();
  await portal.locator('[data-origin-status] p, [data-origin-alert] p').waitFor();
  return (await portal.locator('[data-origin-status] p, [data-origin-alert] p').textContent()) ?? '';
}

/** The allowed origins the page lists beside the form. */
async function originsListed(portal: Page): Promise<string[]> {
  return portal.locator('[data-allowed-origins] code').allTextContents();
}

/** Every quickstart opened; what is wider than the page at this width, or scrolls sideways. */
async function sidewaysAt(page: Page, width: number): Promise<string[]> {
  await page.setViewportSize({ width, height: 800 });
  return page.evaluate(`(() => {
    for (const details of document.querySelectorAll('details.quickstart')) details.open = true;
    const width = document.documentElement.clientWidth;
    const wide = [];
    for (const pre of document.querySelectorAll('pre')) {
      if (pre.scrollWidth > pre.clientWidth + 1) wide.push('pre[data-snippet=' + pre.dataset.snippet + '] scrolls: ' + pre.scrollWidth + ' > ' + pre.clientWidth);
    }
    for (const element of document.querySelectorAll('main *')) {
      const box = element.getBoundingClientRect();
      if (box.right > width + 1) wide.push(element.tagName + ' ends at ' + Math.round(box.right));
    }
    if (document.documentElement.scrollWidth > width + 1) wide.push('the page scrolls sideways');
    return wide;
  })()`);
}

describe('the quickstarts in Chromium', () => {
  let appId: string;
  let webSnippet: string;

  it('the web page from the new-app page: a CORS refusal, then its origin added beside it, and it shows the principal; the ClientSecret stays in sight', async () => {
    await createDeveloper(server, 'web@example.com');
    const portal = await signedInPage(browser, server, 'web@example.com');
    await portal.goto(`${server.baseUrl}/portal/apps/new`);
    await portal.getByLabel('Name').fill('Web shop');
    await follow(portal, () => portal.getByRole('button', { name: 'Create app' }).click());
    appId = (await portal.locator('[data-key=appId]').textContent())!;
    const secret = (await portal.locator('[data-key=clientSecret]').textContent())!;

    // The web page is open, with its copy button; the others are closed until asked for.
    assert.equal(await portal.locator('details.quickstart[open]').count(), 1);
    assert.ok(await portal.locator('[data-snippet=web]').isVisible());
    assert.equal(await portal.locator('[data-snippet=curl]').isVisible(), false);
    await browser.allowClipboard(server.baseUrl);
    await portal.getByRole('button', { name: 'Copy the web page' }).click();
    webSnippet = await portal.evaluate<string>('navigator.clipboard.readText()');
    assert.equal(webSnippet, await portal.locator('[data-snippet=web]').textContent());
    await portal.getByText('curl', { exact: true }).click();
    assert.ok(await portal.locator('[data-snippet=curl]').isVisible(), 'a quickstart opens with its summary');
    await portal.getByRole('button', { name: 'Copy the curl commands' }).click();
    assert.match(await portal.evaluate<string>('navigator.clipboard.readText()'), /^APP_URL=http:\/\/127\.0\.0\.1:/);

    // Served from an origin the app does not list: the browser refuses Tessera's answers.
    const web = await browser.openPage(webSnippet);
    assert.equal(await whoShown(web), 'TypeError: Failed to fetch');
    const refused = await reloadWatching(web);
    assert.equal(refused.who, 'TypeError: Failed to fetch');
    assert.ok(
      refused.console.some((text) => text.includes(`from origin '${browser.origin}' has been blocked by CORS policy`)),
      refused.console.join('\n'),
    );

    // A mistake first: said beside the field, nothing stored.
    assert.match(await addOrigin(portal, `${browser.origin}/index.html`), /^Your page's origin \(".*"\) is not an origin/);
    assert.equal(await portal.getByLabel("Your page's origin").getAttribute('aria-invalid'), 'true');
    assert.equal(await portal.evaluate('document.activeElement.id'), 'page-origin');
    assert.deepEqual((await server.tessera.apps.show(appId, OPERATOR)).configuration.allowedOrigins, []);

    assert.equal(await addOrigin(portal, browser.origin), 'The origin is added: reload your page, and its calls get through.');
    assert.deepEqual(await originsListed(portal), [browser.origin]);
    assert.deepEqual((await server.tessera.apps.show(appId, OPERATOR)).configuration.allowedOrigins, [browser.origin]);
    assert.equal(new URL(portal.url()).pathname, '/portal/apps', 'still the answer to the new-app form');
    assert.equal(await portal.locator('[data-key=clientSecret]').textContent(), secret, 'the ClientSecret is still shown');

    const allowed = await reloadWatching(web);
    assert.equal(allowed.who, 'anonymous (bearer)');
    assert.deepEqual(allowed.console, []);
    await web.close();

    await screenshots(portal, 'quickstarts');
    for (const width of [390, 1280]) assert.deepEqual(await sidewaysAt(portal, width), [], `the new-app page at ${width} px`);
    await portal.close();
  });

  it('the web page from the overview, on another origin: refused, the origin added there (the form posted as without JavaScript too), then anonymous', async () => {
    const portal = await signedInPage(browser, server, 'web@example.com');
    await portal.goto(`${server.baseUrl}/portal/apps/${appId}`);
    assert.equal(await portal.locator('[data-snippet=web]').textContent(), webSnippet, 'the same web page as on the new-app page');
    assert.deepEqual(await originsListed(portal), [browser.origin]);

    const web = await browser.openPage(webSnippet, { origin: browser.otherOrigin });
    assert.equal(await whoShown(web), 'TypeError: Failed to fetch');

    // Posted as a browser without the portal's script posts it: the overview again, saying so.
    await portal.getByLabel("Your page's origin").fill(browser.otherOrigin);
    await follow(portal, () =>
      portal.locator('form[data-add-origin]').evaluate((form) => (form as unknown as { submit(): void }).submit()),
    );
    assert.equal(new URL(portal.url()).pathname, `/portal/apps/${appId}`);
    assert.equal(new URL(portal.url()).hash, '#web-page-origins');
    assert.equal(
      await portal.locator('[data-origin-status]').textContent(),
      'The origin is added: reload your page, and its calls get through.',
    );
    const { top, bottom } = await portal.locator('[data-origin-status]').evaluate((status) => status.getBoundingClientRect().toJSON());
    const height = portal.viewportSize()!.height;
    assert.ok(top >= 0 && bottom <= height, `the answer in sight, not below the fold: ${top} to ${bottom} of ${height}`);
    assert.deepEqual(await originsListed(portal), [browser.origin, browser.otherOrigin]);

    assert.equal((await reloadWatching(web)).who, 'anonymous (bearer)');
    await web.close();

    // Once more: nothing changes, and the page says so.
    assert.equal(await addOrigin(portal, browser.otherOrigin), 'That origin was allowed already: nothing changed.');
    assert.deepEqual(await originsListed(portal), [browser.origin, browser.otherOrigin]);

    // One more through the script: the overview's settings list it too, without a reload.
    assert.equal(await addOrigin(portal, 'http://localhost:5173'), 'The origin is added: reload your page, and its calls get through.');
    assert.deepEqual(await portal.locator('[data-allowed-origins-setting] code').allTextContents(), [
      browser.origin,
      browser.otherOrigin,
      'http://localhost:5173',
    ]);
    for (const width of [390, 1280]) assert.deepEqual(await sidewaysAt(portal, width), [], `the overview at ${width} px`);
    await portal.close();
  });
});
