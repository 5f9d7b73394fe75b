import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserForSuite } from '../helpers/browser.js';
import { REFUSAL_BURST_PER_MINUTE } from '../../src/apps/attention.js';
import { adminFields, anonymousFields, appOn, requestToken } from '../helpers/http.js';
import { OPERATOR } from '../../src/request-context.js';
import { createDeveloper, follow, PHONE_WIDTH, screenshot, screenshots, signIn } from '../helpers/portal.js';
import { serverForSuite, startServer } from '../helpers/server.js';

// The developer portal in Chromium, as a developer uses it: sign in, create an app, copy its keys,
// get tokens with them; and what one developer cannot do to another's apps.

const browser = browserForSuite();
const server = serverForSuite();

/** The value of each key the page shows, by its `data-key`. */
async function keysOn(page: Page): Promise<Record<string, string>> {
  const keys: Record<string, string> = {};
  for (const element of await page.locator('[data-key]').all()) {
    keys[(await element.getAttribute('data-key'))!] = (await element.textContent())!;
  }
  return keys;
}

describe('a developer in the portal', () => {
  it('meets no missing resource and no console error, its icon included (no /favicon.ico asked for)', async () => {
    await createDeveloper(server, 'icon@example.com');
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    page.on('console', (message) => {
      if (message.type() === 'error') failed.push(`console: ${message.text()}`);
    });
    await page.goto(`${server.baseUrl}/portal/sign-in`);
    await signIn(page, server, 'icon@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/new`);
    await page.waitForLoadState('load');
    const href = await page.locator('link[rel="icon"]').getAttribute('href');
    assert.equal(href, '/portal/assets/favicon.svg');
    const icon = await fetch(`${server.baseUrl}${href}`);
    assert.equal(icon.status, 200);
    assert.match(icon.headers.get('content-type') ?? '', /^image\/svg\+xml/);
    assert.deepEqual(failed, []);
  });

  it('signs in, creates an app, sees its four keys once, gets both kinds of token with them, and signs out', async () => {
    const developer = await createDeveloper(server, 'ada@example.com');
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/`);
    assert.equal(new URL(page.url()).pathname, '/portal/sign-in');
    await screenshot(page, 'sign-in');
    await signIn(page, server, developer.email);
    assert.equal(new URL(page.url()).pathname, '/portal/');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Your apps');

    await follow(page, () => page.getByRole('link', { name: 'New app' }).click());
    await page.getByLabel('Name').fill('Shop');
    await follow(page, () => page.getByRole('button', { name: 'Create app' }).click());
    const keys = await keysOn(page);
    assert.deepEqual(Object.keys(keys).sort(), ['appId', 'appKey', 'clientId', 'clientSecret']);
    // The copy buttons put each key on the clipboard, as it is shown.
    await browser.allowClipboard(server.baseUrl);
    for (const [label, key] of [
      ['ClientSecret', 'clientSecret'],
      ['AppKey', 'appKey'],
    ] as const) {
      await page.getByRole('button', { name: `Copy ${label}` }).click();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), keys[key]);
    }
    await screenshot(page, 'new-app');
    const target = {
      app: { appId: keys.appId!, appKey: keys.appKey!, clientId: keys.clientId!, clientSecret: keys.clientSecret! },
      appUrl: `${server.appUrl.replace(server.app.appId, keys.appId!)}`,
    };
    const admin = await requestToken(target, adminFields(target));
    assert.equal(admin.status, 200, admin.text);
    const anonymous = await requestToken(target, anonymousFields(target));
    assert.equal(anonymous.status, 200, anonymous.text);
    assert.match(
      (await page.locator('[data-snippet=curl]').textContent()) ?? '',
      new RegExp(`^APP_URL=${server.baseUrl}/api/apps/${keys.appId}\n`),
    );

    await follow(page, () => page.getByRole('link', { name: "Go to the app's page" }).click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${keys.appId}`);
    const shown = await keysOn(page);
    assert.deepEqual(shown, { appId: keys.appId, appKey: keys.appKey, clientId: keys.clientId }, 'the ClientSecret is shown once only');
    assert.ok(!(await page.content()).includes(keys.clientSecret!));

    await page.goto(`${server.baseUrl}/portal/`);
    assert.equal(await page.getByRole('link', { name: 'Shop' }).count(), 1);
    await screenshot(page, 'apps');
    await follow(page, () => page.getByRole('button', { name: 'Sign out' }).click());
    assert.equal(new URL(page.url()).pathname, '/portal/sign-in');
    assert.equal(await page.getByRole('status').textContent(), 'You are signed out.');
    await page.goto(`${server.baseUrl}/portal/apps/${keys.appId}`);
    assert.equal(new URL(page.url()).pathname, '/portal/sign-in', 'signed out: the app page asks to sign in again');
    await page.close();
  });

  it('sees which app needs attention in the list, and each flag leads to where to look', async () => {
    const developer = await createDeveloper(server, 'flags@example.com');
    const calm = await server.tessera.ownedApps.create('Blog', developer.email, OPERATOR);
    const guessed = appOn(server, await server.tessera.ownedApps.create('Shop', developer.email, OPERATOR));
    assert.equal((await requestToken(guessed, adminFields(guessed), { origin: 'https://shop.example' })).status, 400);
    // Twice a burst but one: whichever minute they fall in, one minute has a burst of them.
    for (let i = 0; i < 2 * REFUSAL_BURST_PER_MINUTE - 1; i++) {
      assert.equal((await requestToken(guessed, adminFields(guessed, { client_secret: `guess-${i}` }))).status, 401);
    }
    await server.tessera.events.flush();
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/portal/sign-in`);
    await signIn(page, server, developer.email);
    assert.equal(await page.locator('.alert').textContent(), 'One of your apps needs attention: see the flags below.');
    const card = page.locator('li.flagged');
    assert.equal(await card.count(), 1);
    assert.match((await card.textContent()) ?? '', new RegExp(guessed.appId));
    assert.equal(await page.locator('li', { hasText: calm.appId }).locator('[data-flag]').count(), 0);
    await page.setViewportSize({ width: PHONE_WIDTH, height: 800 });
    assert.equal(await page.locator('html').evaluate((root) => root.scrollWidth), PHONE_WIDTH, 'nothing wider than a phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshots(page, 'apps-attention');

    const burst = page.getByRole('link', { name: /^\d+ token requests refused in one minute$/ });
    const refused = Number(/^\d+/.exec((await burst.textContent()) ?? '')![0]);
    assert.ok(refused >= REFUSAL_BURST_PER_MINUTE, String(refused));
    await follow(page, () => burst.click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${guessed.appId}/events`);
    assert.equal(await page.locator('[data-type="token.refused"]').count(), refused, "that minute's refusals");
    await page.goBack();
    await follow(page, () => page.getByRole('link', { name: 'ClientSecret leaked into a web page' }).click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${guessed.appId}`);
    assert.equal(await page.locator('[data-warning="secret-exposed"]').count(), 1);
    await page.close();
  });

  it('is told the same thing for an unknown email and a wrong password', async () => {
    await createDeveloper(server, 'grace@example.com');
    const page = await browser.newPage();
    const messages: string[] = [];
    for (const [email, password] of [
      ['nobody@example.com', 'correct horse battery staple'],
      ['grace@example.com', 'wrong password, long enough'],
    ] as const) {
      await signIn(page, server, email, password);
      messages.push((await page.getByRole('alert').textContent()) ?? '');
      assert.equal(await page.getByLabel('Email').inputValue(), email);
    }
    assert.equal(messages[0], messages[1]);
    await page.close();
  });

  it('signs in with a long password of emoji, which the rules count as characters and the field as two units each', async () => {
    const password = '\u{1F511}'.repeat(70); // 70 characters, 140 UTF-16 units
    await server.tessera.developers.create('keys@example.com', password, OPERATOR);
    const page = await browser.newPage();
    await signIn(page, server, 'keys@example.com', password);
    assert.equal(new URL(page.url()).pathname, '/portal/');
    await page.close();
  });

  it('arrives at its apps, signed in, from a sign-in link whose next page is not one a header can carry', async () => {
    await createDeveloper(server, 'hedy@example.com');
    const page = await browser.newPage();
    for (const next of ['/portal/%0D%0ASet-Cookie:%20x=1', '/portal/caf%C3%A9', '/portal/%E2%80%A8']) {
      await page.goto(`${server.baseUrl}/portal/sign-in?next=${next}`);
      await page.getByLabel('Email').fill('hedy@example.com');
      await page.getByLabel('Password').fill('correct horse battery staple');
      await follow(page, () => page.getByRole('button', { name: 'Sign in' }).click());
      assert.equal(new URL(page.url()).pathname, '/portal/', next);
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Your apps', next);
      assert.equal(
        (await page.context().cookies(server.baseUrl)).some((cookie) => cookie.name === 'x'),
        false,
      );
      await follow(page, () => page.getByRole('button', { name: 'Sign out' }).click());
    }
    await page.close();
  });

  it("cannot reach another developer's app: 404, as for an app that does not exist", async () => {
    const owner = await createDeveloper(server, 'owner@example.com');
    await createDeveloper(server, 'other@example.com');
    const created = await server.tessera.ownedApps.create('Private', owner.email, { clientAddress: null, by: 'operator' });
    const page = await browser.newPage();
    await signIn(page, server, 'other@example.com');
    for (const path of [`/portal/apps/${created.appId}`, '/portal/apps/0000000000000000']) {
      const response = await page.goto(`${server.baseUrl}${path}`);
      assert.equal(response?.status(), 404, path);
      assert.ok(!(await page.content()).includes(created.appKey));
    }
    await page.close();
  });

  it('is told, on the new-app form, that it owns as many apps as it may; the name typed is kept', async () => {
    const limited = await startServer({
      developerLimits: { ownedApps: 2, appCreations: { points: 20, duration: 3600 }, invitations: { points: 50, duration: 3600 } },
    });
    try {
      const developer = await createDeveloper(limited, 'busy@example.com');
      for (const name of ['Shop', 'Weather']) await limited.tessera.ownedApps.create(name, developer.email, OPERATOR);
      const page = await browser.newPage();
      await signIn(page, limited, developer.email);
      await follow(page, () => page.getByRole('link', { name: 'New app' }).click());
      await page.getByLabel('Name').fill('Maps');
      const [answer] = await Promise.all([
        page.waitForResponse((response) => response.request().method() === 'POST'),
        follow(page, () => page.getByRole('button', { name: 'Create app' }).click()),
      ]);
      assert.equal(answer.status(), 403);
      assert.equal(
        await page.getByRole('alert').textContent(),
        'You own 2 apps, and a developer may own 2 at most here. Delete an app you no longer need (on its Settings page), or ask the operator of this service to raise the limit.',
      );
      assert.equal(await page.getByLabel('Name').inputValue(), 'Maps');
      assert.equal(await page.locator('[data-key]').count(), 0);
      await screenshots(page, 'app-limit');
      await page.close();
      assert.equal((await limited.tessera.members.appsOf(developer.id)).length, 2);
    } finally {
      await limited.close();
    }
  });
});
