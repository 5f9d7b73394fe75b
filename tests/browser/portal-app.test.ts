import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import type { CreatedApp } from '../../src/apps/service.js';
import { browserForSuite } from '../helpers/browser.js';
import { FETCH_PAGE, pageFetch, type PageRead } from '../helpers/fetch-page.js';
import { adminFields, anonymousFields, basic, bearer, requestToken, whoami, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, createSharedApp, follow, screenshot, screenshots, signedInPage, tabsCutOrBroken } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';

// What a developer does to an app in the portal, in Chromium: its settings (an allowed origin that
// a web page then gets tokens from), rotating its ClientSecret with and without a grace period,
// revoking its tokens, deleting it; and what a collaborator may not do.

const browser = browserForSuite();
const server = serverForSuite({}, async () => {
  await createDeveloper(server, 'owner@example.com');
  await createDeveloper(server, 'collaborator@example.com');
});

/** A new app of owner@example.com, and collaborator@example.com invited to it and accepted. */
const newApp = (name: string) => createSharedApp(server, name, 'owner@example.com', 'collaborator@example.com');

/** From the app's overview, through the confirmation form, to the new secret: its value. */
async function rotateThroughTheForm(page: Page, app: CreatedApp, grace: (page: Page) => Promise<void>, shots = false): Promise<string> {
  await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
  await follow(page, () => page.getByRole('link', { name: 'Rotate ClientSecret' }).click());
  // The rotate page's own address, with nothing after it (a link, not a form sent with GET).
  assert.equal(page.url(), `${server.baseUrl}/portal/apps/${app.appId}/rotate-secret`);
  await grace(page);
  await page.getByLabel('Type the ClientID to confirm').fill(app.clientId);
  if (shots) await screenshot(page, 'app-rotate');
  await follow(page, () => page.getByRole('button', { name: 'Rotate ClientSecret' }).click());
  const secret = await page.locator('[data-key="clientSecret"]').textContent();
  assert.match(secret ?? '', /^tessera_[0-9A-Za-z]{49}$/);
  if (shots) await screenshot(page, 'app-rotated');
  return secret!;
}

async function adminTokenWith(app: AppEndpoint, clientSecret: string) {
  const target = { ...app, clientSecret };
  return requestToken(target, adminFields(target));
}

describe("an app's owner in the portal", () => {
  it('allows a web origin in the settings, and a page on that origin gets an anonymous token', async () => {
    const app = await newApp('Shop');
    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await screenshots(page, 'app-overview');
    // On the narrowest phone, each of the app's five tabs shows whole, on one line, on two rows at most.
    await page.setViewportSize({ width: 320, height: 700 });
    assert.deepEqual(await tabsCutOrBroken(page, 320), [], 'the tabs at 320 px');
    await page.setViewportSize({ width: 1280, height: 800 });
    await follow(page, () => page.getByRole('link', { name: 'Settings', exact: true }).click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${app.appId}/settings`);
    await page.getByLabel('Web pages allowed to call the service').fill(`${browser.origin}\nhttps://*.example.com`);
    await page.getByLabel('Longest lifetime of an anonymous token', { exact: true }).fill('1');
    await page.getByLabel('Unit of the longest lifetime of an anonymous token').selectOption('day');
    await follow(page, () => page.getByRole('button', { name: 'Save settings' }).click());
    assert.equal(await page.getByRole('status').textContent(), 'The settings are saved. They apply to the next token request.');
    assert.equal(await page.getByLabel('Web pages allowed to call the service').inputValue(), `${browser.origin}\nhttps://*.example.com`);
    await screenshots(page, 'app-settings');

    const request = {
      method: 'POST',
      headers: { authorization: basic(app.appId), 'content-type': 'application/json' },
      body: JSON.stringify(anonymousFields(app)),
    };
    const webApp = await browser.openPage(FETCH_PAGE, { origin: browser.origin });
    const token: PageRead = await pageFetch(webApp, `${app.appUrl}/oauth2/token`, request);
    assert.equal(token.status, 200, JSON.stringify(token));
    assert.equal(token.body.id, 'ANONYMOUS');
    assert.ok(token.body.expires_in > 86_000 && token.body.expires_in <= 86_400, 'the longest anonymous token is one day');
    const elsewhere = await browser.openPage(FETCH_PAGE, { origin: browser.otherOrigin });
    assert.match(
      (await pageFetch(elsewhere, `${app.appUrl}/oauth2/token`, request)).refused ?? '',
      /Failed to fetch/,
      'an origin not listed is refused',
    );

    // A mistake is shown in the form, with what was typed.
    await page.getByLabel('Web pages allowed to call the service').fill('https://app.example.com/path');
    await follow(page, () => page.getByRole('button', { name: 'Save settings' }).click());
    assert.match((await page.getByRole('alert').textContent()) ?? '', /is not an origin/);
    assert.equal(await page.getByLabel('Web pages allowed to call the service').inputValue(), 'https://app.example.com/path');
    for (const closing of [webApp, elsewhere, page]) await closing.close();
  });

  it('rotates the ClientSecret without a grace period: the old one is refused at once, the new one works', async () => {
    const app = await newApp('Rotated at once');
    const page = await signedInPage(browser, server, 'owner@example.com');

    // A wrong ClientID rotates nothing.
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/rotate-secret`);
    await page.getByLabel('Type the ClientID to confirm').fill(app.appId);
    await follow(page, () => page.getByRole('button', { name: 'Rotate ClientSecret' }).click());
    assert.match((await page.getByRole('alert').textContent()) ?? '', /not the ClientID of this app/);
    assert.equal((await adminTokenWith(app, app.clientSecret)).status, 200);

    const newSecret = await rotateThroughTheForm(page, app, (form) => form.getByLabel('It stops at once').check(), true);
    const old = await adminTokenWith(app, app.clientSecret);
    assert.equal(old.status, 401);
    assert.equal(old.body.error, 'invalid_client');
    assert.equal((await adminTokenWith(app, newSecret)).status, 200);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    assert.ok(!(await page.content()).includes(newSecret), 'the overview never shows it');
    await page.close();
  });

  it('rotates once when the button is pressed again while the answer is pending: the new secret is shown, and the grace period chosen holds', async () => {
    const app = await newApp('Pressed twice');
    const page = await signedInPage(browser, server, 'owner@example.com');
    const posts: string[] = [];
    // The server's answer to the form reaches the browser a second late, as on a slow network.
    await page.route('**/rotate-secret', async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      posts.push(new URL(route.request().url()).pathname);
      const response = await route.fetch();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await route.fulfill({ response }).catch(() => {}); // a navigation the browser dropped
    });
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/rotate-secret`);
    await page.getByLabel('For 1 day').check();
    await page.getByLabel('Type the ClientID to confirm').fill(app.clientId);
    // Pressed as a person presses it: the mouse, where the button is, twice.
    const button = page.getByRole('button', { name: 'Rotate ClientSecret' });
    await button.scrollIntoViewIfNeeded();
    const box = (await button.boundingBox())!;
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    await follow(page, async () => {
      await page.mouse.click(x, y);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await page.mouse.click(x, y);
    });
    const secret = (await page.locator('[data-key="clientSecret"]').textContent({ timeout: 5_000 })) ?? '';
    assert.match(secret, /^tessera_[0-9A-Za-z]{49}$/, 'the answer shows the new secret');
    assert.deepEqual(posts, [`/portal/apps/${app.appId}/rotate-secret`], 'sent once');
    assert.equal((await adminTokenWith(app, secret)).status, 200);
    assert.equal((await adminTokenWith(app, app.clientSecret)).status, 200, 'the secret in production keeps its day');
    await server.tessera.events.flush();
    assert.equal((await server.tessera.events.list(app.appId, { type: 'app.secret_rotated', limit: 10 })).events.length, 1);
    await page.close();
  });

  it('rotates the ClientSecret with a grace period: both work, then only the new one', async () => {
    const app = await newApp('Rotated with grace');
    const page = await signedInPage(browser, server, 'owner@example.com');
    const newSecret = await rotateThroughTheForm(page, app, async (form) => {
      await form.getByLabel('For another period:').check();
      await form.getByLabel('Seconds, from 1 to').fill('5');
    });
    const rotatedAt = Date.now();
    // The answer says until when, to the second: a 5-second grace period ends within the minute.
    const answered = page.locator('.outcome time');
    assert.match((await answered.textContent()) ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    const answeredUntil = Date.parse((await answered.getAttribute('datetime')) ?? '');
    assert.ok(Math.abs(answeredUntil - (rotatedAt + 5000)) < 2000, `until ${answeredUntil}`);
    assert.equal((await answered.textContent())!.slice(11, 19), new Date(answeredUntil).toISOString().slice(11, 19));
    assert.equal((await adminTokenWith(app, app.clientSecret)).status, 200, 'the old secret works during the grace period');
    assert.equal((await adminTokenWith(app, newSecret)).status, 200);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    const validUntil = await page.locator('[data-previous-secret-valid-until]').getAttribute('data-previous-secret-valid-until');
    assert.ok(validUntil !== null && Math.abs(Date.parse(validUntil) - (rotatedAt + 5000)) < 2000, `until ${validUntil}`);
    assert.match((await page.locator('.notice').textContent()) ?? '', /The previous ClientSecret still works, until/);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(validUntil) - Date.now() + 50)));
    const old = await adminTokenWith(app, app.clientSecret);
    assert.equal(old.status, 401);
    assert.equal(old.body.error, 'invalid_client');
    assert.equal((await adminTokenWith(app, newSecret)).status, 200);
    await page.reload();
    assert.equal(await page.locator('[data-previous-secret-valid-until]').count(), 0, 'the overview no longer mentions it');

    // One hour, chosen as most will: the overview says until when.
    await rotateThroughTheForm(page, { ...app, clientSecret: newSecret }, (form) => form.getByLabel('For 1 hour').check());
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    const hourLater = await page.locator('[data-previous-secret-valid-until]').getAttribute('data-previous-secret-valid-until');
    assert.ok(hourLater !== null && Math.abs(Date.parse(hourLater) - (Date.now() + 3_600_000)) < 10_000, `until ${hourLater}`);
    assert.equal((await adminTokenWith(app, newSecret)).status, 200, 'the secret replaced an hour ago still works');

    // Every server has the new one: the grace period is ended from the overview's link, on the rotate page.
    await follow(page, () => page.getByRole('link', { name: 'End it now' }).click());
    assert.equal(new URL(page.url()).hash, '#end-previous-secret');
    assert.equal(await page.getByRole('heading', { name: 'End the grace period now' }).count(), 1);
    await screenshots(page, 'app-rotate-grace');
    await follow(page, () => page.getByRole('button', { name: 'End the previous ClientSecret now' }).click());
    assert.match((await page.getByRole('status').first().textContent()) ?? '', /The previous secret is refused from now on/);
    assert.equal(await page.getByRole('heading', { name: 'End the grace period now' }).count(), 0);
    assert.equal((await adminTokenWith(app, newSecret)).status, 401, 'the replaced secret is refused at once');
    await page.close();
  });

  it('revokes all tokens, then deletes the app and is back at the apps list', async () => {
    const app = await newApp('Short-lived');
    const admin = (await adminTokenWith(app, app.clientSecret)).body.access_token as string;
    const anonymous = (await requestToken(app, anonymousFields(app))).body.access_token as string;
    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/settings`);
    await page.getByLabel('All tokens, of both kinds').check();
    await page.getByLabel('Yes, revoke them now').check();
    await follow(page, () => page.getByRole('button', { name: 'Revoke tokens' }).click());
    assert.equal(
      await page.getByRole('status').textContent(),
      "Every admin token, and every anonymous token issued until now, is refused from now on. Clients get new tokens with the app's keys.",
    );
    assert.equal((await whoami(app.appUrl, bearer(admin))).status, 401);
    assert.equal((await whoami(app.appUrl, bearer(anonymous))).status, 401);
    assert.equal((await adminTokenWith(app, app.clientSecret)).status, 200, 'the keys still get new tokens');

    await page.getByLabel("Type the app's name to confirm").fill('Short-lived');
    await follow(page, () => page.getByRole('button', { name: 'Delete app' }).click());
    assert.equal(new URL(page.url()).pathname, '/portal/');
    assert.equal(await page.getByRole('link', { name: 'Short-lived' }).count(), 0);
    assert.equal((await adminTokenWith(app, app.clientSecret)).status, 404);
    await page.close();
  });
});

describe('a collaborator in the portal', () => {
  it('sees no "Rotate ClientSecret" button nor "Delete app", and is refused both (403)', async () => {
    const app = await newApp('Shared');
    const page = await signedInPage(browser, server, 'collaborator@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Shared');
    assert.equal(await page.getByRole('button', { name: 'Rotate ClientSecret' }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Rotate ClientSecret' }).count(), 0);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/settings`);
    assert.equal(await page.getByRole('button', { name: 'Save settings' }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Delete app' }).count(), 0);
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();

    const form = await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/rotate-secret`);
    assert.equal(form?.status(), 403);
    for (const [path, fields] of [
      ['rotate-secret', { grace: 'none', clientId: app.clientId }],
      ['delete', { name: 'Shared' }],
    ] as const) {
      const response = await page.request.post(`${server.baseUrl}/portal/apps/${app.appId}/${path}`, {
        form: { _csrf: csrf, ...fields },
        maxRedirects: 0,
      });
      assert.equal(response.status(), 403, path);
      assert.doesNotMatch(await response.text(), /data-key="clientSecret"/);
    }
    assert.equal((await adminTokenWith(app, app.clientSecret)).status, 200, 'the secret is the same');
    await page.close();
  });
});
