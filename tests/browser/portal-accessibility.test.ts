import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { REFUSAL_BURST_PER_MINUTE } from '../../src/apps/attention.js';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { adminFields, anonymousFields, appOn, requestToken, type AppEndpoint } from '../helpers/http.js';
import { addCollaborator, autofocusApplied, createDeveloper, follow, PASSWORD, signedInPage, signIn } from '../helpers/portal.js';
import { serverForSuite, startServer } from '../helpers/server.js';

// Every page of the portal, in the states a developer sees it in, checked by axe-core (WCAG 2.1 A
// and AA, and axe's best practices) at a desktop's width and at a phone's; and the way from signing
// in to an app's settings with the keyboard alone, its focus always visible.

// The portal's Content-Security-Policy allows scripts from its own origin only, so axe is not
// added as a <script>: its source is evaluated through the DevTools protocol, which the policy
// does not govern.
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core'), 'utf8');
const WIDTHS = [1280, 375];

const browser = browserForSuite();
const server = serverForSuite({ webhookDestinations: { allowHttp: true, allowPrivate: true } });

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe's violations on the page as it is, at each width; fails with each one's rule, help and elements. */
async function assertAccessible(page: Page, what: string): Promise<void> {
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  const found: string[] = [];
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
    const violations = await page.evaluate<Violation[]>(
      `axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }).then((results) => results.violations)`,
    );
    for (const violation of violations) {
      const targets = violation.nodes.map((node) => node.target.join(' ')).join(', ');
      found.push(`${width}px: ${violation.id} (${violation.impact}): ${violation.help}: ${targets}`);
    }
  }
  await page.setViewportSize(size);
  assert.deepEqual(found, [], `${what} (${page.url()}):\n${found.join('\n')}`);
}

/** Opens every quickstart (`<details>`), so that axe sees what each one holds. */
async function openQuickstarts(page: Page): Promise<void> {
  const opened = await page.evaluate(`(() => {
    const all = [...document.querySelectorAll('details.quickstart')];
    for (const details of all) details.open = true;
    return all.length;
  })()`);
  assert.equal(opened, 5, 'the five quickstarts');
}

async function submit(page: Page, button: string): Promise<void> {
  await follow(page, () => page.getByRole('button', { name: button }).click());
}

describe('the portal, checked by axe at 1280 and 375 px', () => {
  let owner: { email: string; id: string };
  let app: AppEndpoint;

  before(async () => {
    owner = await createDeveloper(server, 'owner@example.com');
    app = appOn(server, await server.tessera.ownedApps.create('Shop', owner.email, OPERATOR));
    await createDeveloper(server, 'collaborator@example.com');
    await addCollaborator(server, app.appId, 'collaborator@example.com');
    // Use to draw in the charts: tokens of both kinds, and wrong secrets.
    for (let index = 0; index < 4; index++) assert.equal((await requestToken(app, anonymousFields(app))).status, 200);
    assert.equal((await requestToken(app, adminFields(app))).status, 200);
    for (let index = 0; index < 3; index++)
      assert.equal((await requestToken(app, adminFields(app, { client_secret: 'guess' }))).status, 401);
    await server.tessera.events.flush();
  });

  it('sign-in, and sign-in with its error', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/portal/sign-in`);
    await assertAccessible(page, 'sign-in');
    await signIn(page, server, owner.email, 'a wrong password, long enough');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'sign-in with an error');
    await page.close();
  });

  it('sign-up (PORTAL_SIGNUP=open), and sign-up with its error', async () => {
    const open = await startServer({ portalSignup: 'open' });
    try {
      const page = await browser.newPage();
      await page.goto(`${open.baseUrl}/portal/sign-up`);
      await assertAccessible(page, 'sign-up');
      await page.getByLabel('Email').fill('pat@example.com');
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await page.getByLabel('Repeat the password').fill('not the same password at all');
      await submit(page, 'Sign up');
      assert.equal(await page.getByRole('alert').count(), 1);
      await assertAccessible(page, 'sign-up with an error');
      await page.close();
    } finally {
      await open.close();
    }
  });

  it('set-password from a link, and with its error', async () => {
    const created = await server.tessera.developers.create('nora@example.com', null, OPERATOR);
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}${created.link!.path}`);
    await assertAccessible(page, 'set-password');
    await page.getByLabel('New password', { exact: true }).fill('too short');
    await page.getByLabel('Repeat the password').fill('too short');
    await submit(page, 'Set password and sign in');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'set-password with an error');
    await page.close();
  });

  it('the apps list, empty and with apps; the new app form, with its error; the created app', async () => {
    await createDeveloper(server, 'new@example.com');
    const page = await signedInPage(browser, server, 'new@example.com');
    await assertAccessible(page, 'the apps list, empty');
    await page.goto(`${server.baseUrl}/portal/apps/new`);
    await assertAccessible(page, 'the new app form');
    await page.getByLabel('Name').fill('   ');
    await page.getByLabel('Name').evaluate((input) => input.removeAttribute('required'));
    await submit(page, 'Create app');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'the new app form with an error');
    await page.getByLabel('Name').fill('Weather');
    await submit(page, 'Create app');
    assert.equal(await page.locator('[data-key=clientSecret]').count(), 1);
    await openQuickstarts(page);
    await assertAccessible(page, 'the created app, its keys shown once, every quickstart open');
    // The add-origin form, sent by the portal's script: its mistake shown in place.
    await page.getByLabel("Your page's origin").fill('localhost:5173');
    await page.getByRole('button', { name: 'Allow this origin' }).click();
    await page.locator('[data-origin-alert] [role=alert]').waitFor();
    await assertAccessible(page, 'the created app, the add-origin form with its mistake');
    await page.getByLabel("Your page's origin").fill('http://localhost:5173');
    await page.getByRole('button', { name: 'Allow this origin' }).click();
    await page.locator('[data-origin-status] p').waitFor();
    await assertAccessible(page, 'the created app, an origin added');
    await page.goto(`${server.baseUrl}/portal/`);
    await assertAccessible(page, 'the apps list, with an app');
    await page.close();
  });

  it('the apps list with an app that needs attention: a leaked ClientSecret, a burst of refusals', async () => {
    const flagged = appOn(server, await server.tessera.ownedApps.create('Flagged', owner.email, OPERATOR));
    assert.equal((await requestToken(flagged, adminFields(flagged), { origin: 'https://flagged.example' })).status, 400);
    // Twice a burst but one: whichever minute they fall in, one minute has a burst of them.
    for (let index = 0; index < 2 * REFUSAL_BURST_PER_MINUTE - 1; index++)
      assert.equal((await requestToken(flagged, adminFields(flagged, { client_secret: 'guess' }))).status, 401);
    await server.tessera.events.flush();
    const page = await signedInPage(browser, server, owner.email);
    assert.equal(await page.locator('[data-flag]').count(), 2);
    await assertAccessible(page, 'the apps list, flagged');
    await page.close();
    await server.tessera.apps.delete(flagged.appId, OPERATOR);
  });

  it("an app's overview, owner and collaborator", async () => {
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await openQuickstarts(page);
    await assertAccessible(page, 'the overview, owner, every quickstart open');
    // The add-origin form posted as without the portal's script: the overview again, with the mistake (400), then saved.
    await page.getByLabel("Your page's origin").fill('https://shop.example/index.html');
    await follow(page, () => page.locator('form[data-add-origin]').evaluate((form) => (form as unknown as { submit(): void }).submit()));
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'the overview, the add-origin form with its mistake');
    await page.getByLabel("Your page's origin").fill('https://shop.example');
    await follow(page, () => page.locator('form[data-add-origin]').evaluate((form) => (form as unknown as { submit(): void }).submit()));
    assert.match((await page.locator('[data-origin-status]').textContent()) ?? '', /The origin is added/);
    await assertAccessible(page, 'the overview, an origin added');
    await page.close();
    const collaborator = await signedInPage(browser, server, 'collaborator@example.com');
    await collaborator.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await openQuickstarts(collaborator);
    await assertAccessible(collaborator, 'the overview, collaborator');
    await collaborator.close();
  });

  it('settings, with an error, and saved', async () => {
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/settings`);
    await assertAccessible(page, 'settings');
    await page.getByLabel('Web pages allowed to call the service').fill('https://app.example.com/path');
    await submit(page, 'Save settings');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'settings with an error');
    await page.getByLabel('Web pages allowed to call the service').fill('https://app.example.com');
    await submit(page, 'Save settings');
    assert.equal(await page.getByRole('status').count(), 1);
    await assertAccessible(page, 'settings, saved');
    await page.close();
  });

  it('events, with a chart of data; filtered to a custom range; with a mistake in the range; one event', async () => {
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/events`);
    assert.ok((await page.locator('li.event').count()) > 0);
    assert.ok(Number(await page.locator('#chart-tokens').getAttribute('data-issued')) > 0);
    await assertAccessible(page, 'events');
    const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    await page.getByLabel('Custom range').check();
    await page.getByLabel('From (UTC)').fill(minute(Date.now() - 3_600_000));
    await page.getByLabel('To (UTC)').fill(minute(Date.now() + 60_000));
    await page.getByLabel('Type').selectOption('token.refused');
    await page.getByLabel('Reason').selectOption('invalid_client');
    await page.getByLabel('Client address').fill('127.0.0.1');
    await submit(page, 'Show');
    assert.equal(await page.locator('li.event').count(), 3);
    await assertAccessible(page, 'events, filtered to a custom range');
    await page.getByLabel('Client address').fill('not an address');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('alert').waitFor();
    await assertAccessible(page, 'events, with a mistake in the form');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/events?type=token.refused`);
    await follow(page, () => page.locator('li.event .event-title a').first().click());
    assert.equal(await page.locator('.event-facts').count(), 1);
    await assertAccessible(page, 'one event');
    await page.close();
  });

  it('people, with an invitation link shown; removing a collaborator; accepting an invitation', async () => {
    await createDeveloper(server, 'ben@example.com');
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/people`);
    await assertAccessible(page, 'people');
    await page.getByLabel('Email').fill('ben@example.com');
    await submit(page, 'Invite');
    const link = (await page.locator('[data-invitation-link]').textContent())!;
    await assertAccessible(page, 'people, with an invitation link');
    await follow(page, () => page.getByRole('link', { name: 'Remove collaborator@example.com' }).click());
    await assertAccessible(page, 'removing a collaborator');
    await page.close();

    const invitee = await signedInPage(browser, server, 'ben@example.com');
    await invitee.goto(link);
    assert.equal(await invitee.getByRole('button', { name: 'Accept invitation' }).count(), 1);
    await assertAccessible(invitee, 'accept-invitation');
    await invitee.close();
  });

  it('credentials, empty and listed; the form with its error; the secret shown once; rotating; revoking; as the collaborator', async () => {
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/credentials`);
    await assertAccessible(page, 'credentials, empty');
    await page.getByLabel('Name').fill('CI: read events');
    await page.getByLabel('events:read').check();
    await page.getByLabel('Allowed addresses (optional)').fill('127.0.0.1/8');
    await submit(page, 'Create credential');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'credentials, the form with an error');
    await page.getByLabel('Allowed addresses (optional)').fill('127.0.0.0/8');
    await submit(page, 'Create credential');
    assert.equal(await page.locator('[data-key=clientSecret]').count(), 1);
    await assertAccessible(page, 'the new credential, its secret shown once');
    await follow(page, () => page.getByRole('link', { name: 'Back to the credentials' }).click());
    await assertAccessible(page, 'credentials, listed');
    await follow(page, () => page.getByRole('link', { name: 'Rotate secret of CI: read events' }).click());
    await assertAccessible(page, 'rotating a credential');
    await submit(page, 'Rotate secret');
    assert.equal(await page.locator('[data-key=clientSecret]').count(), 1);
    await assertAccessible(page, 'the rotated credential');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/credentials`);
    await follow(page, () => page.getByRole('link', { name: 'Revoke CI: read events' }).click());
    await assertAccessible(page, 'revoking a credential');
    await submit(page, 'Revoke credential');
    assert.equal(await page.getByRole('status').count(), 1);
    await assertAccessible(page, 'credentials, one revoked');
    await page.close();

    await server.tessera.credentials.create(app.appId, { name: 'Deploy bot', scopes: ['credentials:manage'] }, OPERATOR);
    const collaborator = await signedInPage(browser, server, 'collaborator@example.com');
    await collaborator.goto(`${server.baseUrl}/portal/apps/${app.appId}/credentials`);
    assert.equal(await collaborator.getByLabel('credentials:manage').isDisabled(), true);
    await assertAccessible(collaborator, 'credentials, collaborator');
    await collaborator.close();
  });

  it('webhooks: the form with its error, the secret shown once, listed, deliveries, deleting', async () => {
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/webhooks`);
    await assertAccessible(page, 'webhooks, none');
    await page.getByLabel('URL', { exact: true }).fill('ftp://127.0.0.1/hooks');
    await submit(page, 'Add webhook');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'webhooks, the form with an error');
    // Port 9 (discard) listens nowhere here: the delivery fails, and waits for its next attempt.
    await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/hooks');
    await submit(page, 'Add webhook');
    assert.equal(await page.locator('[data-webhook-secret]').count(), 1);
    await assertAccessible(page, 'the new webhook, its secret shown once');
    await server.tessera.webhookSender.sendDue();
    await follow(page, () => page.getByRole('link', { name: 'Back to the webhooks' }).click());
    await assertAccessible(page, 'webhooks, listed');
    await follow(page, () => page.getByRole('link', { name: 'Deliveries to http://127.0.0.1:9/hooks' }).click());
    assert.equal(await page.locator('[data-state=pending]').count(), 1);
    await assertAccessible(page, "a webhook's deliveries");
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/webhooks`);
    await follow(page, () => page.getByRole('link', { name: 'Delete the webhook to http://127.0.0.1:9/hooks' }).click());
    await assertAccessible(page, 'deleting a webhook');
    await submit(page, 'Delete webhook');
    assert.equal(await page.getByRole('status').count(), 1);
    await assertAccessible(page, 'webhooks, one deleted');
    await page.close();
  });

  it('account, with its error', async () => {
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/account`);
    await assertAccessible(page, 'account');
    await page.getByLabel('Current password').fill('not the password at all');
    await page.getByLabel('New password', { exact: true }).fill('a brand new password, long');
    await page.getByLabel('Repeat the new password').fill('a brand new password, long');
    await submit(page, 'Change password');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'account with an error');
    await page.close();
  });

  it('attestation: the outcomes, the settings with an error, the platforms, a debug token shown once', async () => {
    const page = await signedInPage(browser, server, owner.email);
    await server.tessera.apps.configure(app.appId, { anonymousAttestation: 'monitor' }, OPERATOR);
    await requestToken(app, anonymousFields(app));
    await server.tessera.events.flush();
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    await assertAccessible(page, 'attestation');
    await page.getByLabel('Proof of work: the most attempts a challenge needs').fill('1');
    await submit(page, 'Save attestation settings');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'attestation, the settings with an error');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    await page.getByLabel('Team ID').fill('nope');
    await page.getByLabel('Bundle identifier').fill('com.example.shop');
    await submit(page, 'Save App Attest');
    await assertAccessible(page, 'attestation, a platform with an error');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    await page.getByLabel('Name of a new debug token').fill('CI');
    await submit(page, 'Make a debug token');
    await assertAccessible(page, 'attestation, a debug token shown once');
    await server.tessera.apps.configure(app.appId, { anonymousAttestation: 'off' }, OPERATOR);
    await page.close();
  });

  it('the 404 and 403 pages', async () => {
    const page = await signedInPage(browser, server, 'collaborator@example.com');
    assert.equal((await page.goto(`${server.baseUrl}/portal/apps/0000000000000000`))?.status(), 404);
    await assertAccessible(page, 'the 404 page');
    assert.equal((await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/rotate-secret`))?.status(), 403);
    await assertAccessible(page, 'the 403 page');
    await page.close();
  });

  // Last: the warning stays until the ClientSecret is rotated.
  it('the overview with the leaked-secret warning; rotate-secret, with its error; the rotated secret', async () => {
    const exposed = await requestToken(app, adminFields(app), { origin: 'https://shop.example' });
    assert.equal(exposed.status, 400, exposed.text);
    const page = await signedInPage(browser, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    assert.equal(await page.locator('[data-warning=secret-exposed]').count(), 1);
    await assertAccessible(page, 'the overview with the leaked-secret warning');
    await follow(page, () => page.getByRole('link', { name: 'Rotate ClientSecret' }).click());
    await assertAccessible(page, 'rotate-secret');
    await page.getByLabel('Type the ClientID to confirm').fill(app.appId);
    await submit(page, 'Rotate ClientSecret');
    assert.equal(await page.getByRole('alert').count(), 1);
    await assertAccessible(page, 'rotate-secret with an error');
    await page.getByLabel('Type the ClientID to confirm').fill(app.clientId);
    await submit(page, 'Rotate ClientSecret');
    assert.equal(await page.locator('[data-key=clientSecret]').count(), 1);
    await assertAccessible(page, 'the rotated secret');
    await page.close();
  });
});

describe('the portal with the keyboard alone', () => {
  // Run in the page (strings: the tests are compiled without the DOM's types).
  /** What the focused element is called: its label, or its text. */
  function focusedName(page: Page): Promise<string> {
    return page.evaluate(`(() => {
      const element = document.activeElement;
      if (element === null || element === document.body) return '';
      return ((element.labels && element.labels[0] ? element.labels[0].textContent : element.textContent) ?? '').trim();
    })()`);
  }

  /** Whether the focused element shows it: an outline that is drawn. */
  function focusShown(page: Page): Promise<boolean> {
    return page.evaluate(`(() => {
      const element = document.activeElement;
      if (element === null || element === document.body) return false;
      const style = getComputedStyle(element);
      return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
    })()`);
  }

  /** Presses Tab (or Shift+Tab) until the element named `name` has the focus, checking at each step that focus is visible. */
  async function tabTo(page: Page, name: string, key: 'Tab' | 'Shift+Tab' = 'Tab'): Promise<void> {
    await autofocusApplied(page);
    for (let step = 0; step < 30; step++) {
      // A field with `autofocus` has the focus already.
      if (step > 0 || (await focusedName(page)) !== name) await page.keyboard.press(key);
      assert.ok(await focusShown(page), `focus visible on "${await focusedName(page)}" of ${page.url()}`);
      if ((await focusedName(page)) === name) return;
    }
    assert.fail(`no "${name}" reached with ${key} on ${page.url()}`);
  }

  async function press(page: Page, key: string): Promise<void> {
    await follow(page, () => page.keyboard.press(key));
  }

  it('signs in, creates an app and reaches its settings, the focus visible all the way', async () => {
    await createDeveloper(server, 'keys@example.com');
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/portal/sign-in`);
    await tabTo(page, 'Email');
    await page.keyboard.type('keys@example.com');
    await tabTo(page, 'Password');
    await page.keyboard.type(PASSWORD);
    await tabTo(page, 'Sign in');
    await tabTo(page, 'Password', 'Shift+Tab');
    await press(page, 'Enter');
    assert.equal(new URL(page.url()).pathname, '/portal/');

    await tabTo(page, 'New app');
    await press(page, 'Enter');
    assert.equal(new URL(page.url()).pathname, '/portal/apps/new');
    await tabTo(page, 'Name');
    await page.keyboard.type('Typed');
    await tabTo(page, 'Create app');
    await press(page, 'Enter');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Typed');

    await tabTo(page, "Go to the app's page");
    await press(page, 'Enter');
    assert.match(new URL(page.url()).pathname, /^\/portal\/apps\/[^/]+$/);
    await tabTo(page, 'Settings');
    await press(page, 'Enter');
    assert.match(new URL(page.url()).pathname, /^\/portal\/apps\/[^/]+\/settings$/);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Typed');
    await page.close();
  });
});
