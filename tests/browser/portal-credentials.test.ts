import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { basic, bearer, formBody, request, whoami, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, createSharedApp, follow, screenshots, signedInPage, tabsCutOrBroken } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';

// An app's credentials in Chromium, as a person goes through them: the Credentials tab, the form
// (a mistake first), the secret shown once and a token got with it, the list, rotating with the
// hour of grace offered, revoking; and a collaborator, who may not give credentials:manage.

const browser = browserForSuite();
const server = serverForSuite({}, async () => {
  await createDeveloper(server, 'owner@example.com');
  await createDeveloper(server, 'collaborator@example.com');
});

const newApp = (name: string) => createSharedApp(server, name, 'owner@example.com', 'collaborator@example.com');

function path(page: Page): string {
  return new URL(page.url()).pathname;
}

/** A token request with a credential, as the page's curl command sends it. */
function tokenRequest(app: AppEndpoint, keys: { clientId: string; clientSecret: string }) {
  return request(`${app.appUrl}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(keys.clientId, keys.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: formBody({ grant_type: 'client_credentials' }),
  });
}

/** The keys the page shows once. */
async function keysShown(page: Page): Promise<{ clientId: string; clientSecret: string }> {
  const clientId = (await page.locator('[data-key="clientId"]').textContent()) ?? '';
  const clientSecret = (await page.locator('[data-key="clientSecret"]').textContent()) ?? '';
  assert.match(clientId, /^tcl_[0-9a-f]{24}$/);
  assert.match(clientSecret, /^tessera_[0-9A-Za-z]{49}$/);
  return { clientId, clientSecret };
}

/** Whether no element of the page is wider than the page: nothing to scroll sideways on a phone. */
async function fitsWidth(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    const wide = [];
    for (const element of document.querySelectorAll('main *')) {
      if (element.closest('pre')) continue;
      const box = element.getBoundingClientRect();
      if (box.right > width + 1) wide.push(element.tagName + (element.id ? '#' + element.id : '') + ' ' + Math.round(box.right));
    }
    if (document.documentElement.scrollWidth > width + 1) wide.push('the page scrolls sideways');
    return wide;
  })()`);
}

describe("an app's credentials in the portal", () => {
  it('the owner makes a credential through the form, copies its secret once, gets a scoped token, rotates and revokes it', async () => {
    const app = await newApp('Orders');
    // One made by the operator before, with credentials:manage, for the list to show more than one kind.
    await server.tessera.credentials.create(
      app.appId,
      { name: 'Deploy bot', scopes: ['configuration:write', 'credentials:manage', 'tokens:revoke'] },
      OPERATOR,
    );
    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await follow(page, () => page.getByRole('link', { name: 'Credentials', exact: true }).click());
    assert.equal(path(page), `/portal/apps/${app.appId}/credentials`);
    assert.equal(await page.getByRole('link', { name: 'Credentials', exact: true }).getAttribute('aria-current'), 'page');
    assert.equal(await page.getByRole('heading', { name: 'Deploy bot' }).count(), 1);

    // The five tabs show whole on the narrowest phone and on a common one.
    for (const width of [320, 390]) {
      await page.setViewportSize({ width, height: 700 });
      assert.deepEqual(await tabsCutOrBroken(page, width), [], `the tabs at ${width} px`);
    }
    await page.setViewportSize({ width: 1280, height: 800 });

    // A mistake first: no scope ticked. The form comes back with what was typed, and the message.
    await page.getByLabel('Name').fill('CI: read events');
    await page.getByLabel('Allowed addresses (optional)').fill('127.0.0.0/8\n::1');
    await follow(page, () => page.getByRole('button', { name: 'Create credential' }).click());
    assert.match((await page.getByRole('alert').textContent()) ?? '', /Choose at least one scope/);
    assert.equal(await page.getByLabel('Name').inputValue(), 'CI: read events');
    assert.equal(await page.getByLabel('Allowed addresses (optional)').inputValue(), '127.0.0.0/8\n::1');
    assert.equal(await page.evaluate('document.activeElement.value'), 'app:read', 'the first scope has the focus');
    assert.ok(await page.getByRole('alert').isVisible());

    await page.getByLabel('events:read').check();
    await page.getByLabel("The app's own scopes").fill('reports:read');
    const expiry = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 16);
    await page.getByLabel('Expires (UTC, optional)').fill(expiry);
    await follow(page, () => page.getByRole('button', { name: 'Create credential' }).click());
    assert.equal(await page.getByRole('heading', { level: 2 }).textContent(), 'New credential: CI: read events');
    const keys = await keysShown(page);
    const command = (await page.locator('[data-snippet=credential-token]').textContent()) ?? '';
    // Its text is checked, and run in bash, by tests/http/portal-credentials.test.ts.
    assert.ok(command.startsWith(`APP_URL=${server.baseUrl}/api/apps/${app.appId}\n`), command);
    assert.ok(command.includes(`-d client_id=${keys.clientId} `), command);
    assert.ok(!command.includes(keys.clientSecret), "the secret is not on the command line, where the shell's history keeps it");
    await screenshots(page, 'credential-created');
    await page.setViewportSize({ width: 390, height: 800 });
    assert.deepEqual(await fitsWidth(page), [], 'the secret page fits a phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    const token = await tokenRequest(app, keys);
    assert.equal(token.status, 200, token.text);
    assert.equal(token.body.scope, 'events:read reports:read');

    await follow(page, () => page.getByRole('link', { name: 'Back to the credentials' }).click());
    assert.ok(!(await page.content()).includes(keys.clientSecret), 'the list never shows the secret');
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'CI: read events' }) });
    const facts = (await card.textContent()) ?? '';
    assert.ok(facts.includes(keys.clientId));
    assert.match(facts, /events:read\s*reports:read/);
    assert.match(facts, /127\.0\.0\.0\/8\s*::1\/128/);
    assert.match(facts, /by owner@example\.com/);
    assert.match(facts, new RegExp(`Expires\\s*${expiry.replace('T', ' ')} UTC`));
    const operatorCard = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'Deploy bot' }) });
    assert.match((await operatorCard.textContent()) ?? '', /Any address[\s\S]*by the operator[\s\S]*Last used\s*Never/);
    await screenshots(page, 'credentials');
    await page.setViewportSize({ width: 390, height: 800 });
    assert.deepEqual(await fitsWidth(page), [], 'the list fits a phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // Rotating: an hour of grace is offered first; the new secret is shown once, the old one keeps its hour.
    await follow(page, () => page.getByRole('link', { name: 'Rotate secret of CI: read events' }).click());
    assert.equal(await page.getByLabel('For 1 hour').isChecked(), true);
    await follow(page, () => page.getByRole('button', { name: 'Rotate secret' }).click());
    const rotated = await keysShown(page);
    assert.equal(rotated.clientId, keys.clientId);
    assert.notEqual(rotated.clientSecret, keys.clientSecret);
    assert.equal((await tokenRequest(app, keys)).status, 200, 'the old secret keeps its hour');
    assert.equal((await tokenRequest(app, rotated)).status, 200);

    // Revoking asks first, and the list says how many tokens went with it.
    await follow(page, () => page.getByRole('link', { name: 'Back to the credentials' }).click());
    await follow(page, () => page.getByRole('link', { name: 'Revoke CI: read events' }).click());
    assert.equal(await page.getByRole('heading', { level: 2 }).textContent(), 'Revoke CI: read events?');
    await follow(page, () => page.getByRole('button', { name: 'Revoke credential' }).click());
    assert.equal(path(page), `/portal/apps/${app.appId}/credentials`);
    assert.equal(
      await page.getByRole('status').textContent(),
      'The credential CI: read events is revoked: its secret no longer works, and the 3 admin tokens it got were revoked with it.',
    );
    assert.equal(await page.getByRole('heading', { name: 'CI: read events' }).count(), 0);
    assert.equal((await whoami(app.appUrl, bearer(token.body.access_token))).status, 401);
    assert.equal((await tokenRequest(app, rotated)).status, 401);
    await page.close();
  });

  it('a collaborator cannot tick credentials:manage, and makes a credential without it', async () => {
    const app = await newApp('Shared');
    const page = await signedInPage(browser, server, 'collaborator@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/credentials`);
    assert.match((await page.locator('.empty-state').textContent()) ?? '', /a CI job that only reads events/);
    assert.equal(await page.getByLabel('credentials:manage').isDisabled(), true);
    assert.match((await page.locator('#scope-credentials-manage-hint').textContent()) ?? '', /Only the app's owner may give it/);
    await screenshots(page, 'credentials-empty');
    await page.getByLabel('Name').fill('Support desk');
    await page.getByLabel('tokens:introspect').check();
    await follow(page, () => page.getByRole('button', { name: 'Create credential' }).click());
    const keys = await keysShown(page);
    assert.equal((await tokenRequest(app, keys)).body.scope, 'tokens:introspect');
    await follow(page, () => page.getByRole('link', { name: 'Back to the credentials' }).click());
    assert.match(
      (await page
        .getByRole('listitem')
        .filter({ has: page.getByRole('heading', { name: 'Support desk' }) })
        .textContent()) ?? '',
      /by collaborator@example\.com/,
    );
    await page.close();
  });
});
