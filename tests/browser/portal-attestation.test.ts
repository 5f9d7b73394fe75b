import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { genuineVerdict, integrityToken, playConsoleKeys, powAttestation } from '../helpers/attestation.js';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { anonymousFields, basic, bearer, requestToken, whoami } from '../helpers/http.js';
import { createDeveloper, createSharedApp, follow, PHONE_WIDTH, screenshots, signedInPage } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';

// An app's attestation in Chromium, as a person decides on it: the Attestation tab off, monitor
// turned on, the requests of the app's clients counted by outcome with the share enforcement would
// refuse, then enforce and Basic anonymous access off; a debug token shown once, used, revoked.

const browser = browserForSuite();
const server = serverForSuite({}, async () => {
  await createDeveloper(server, 'owner@example.com');
  await createDeveloper(server, 'collaborator@example.com');
});

/** Whether no element of the page is wider than the page: nothing to scroll sideways on a phone. */
async function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    const wide = [];
    for (const element of document.querySelectorAll('main *')) {
      if (element.closest('.table-frame')) continue;
      const box = element.getBoundingClientRect();
      if (box.right > width + 1) wide.push(element.tagName + (element.id ? '#' + element.id : '') + ' ' + Math.round(box.right));
    }
    if (document.documentElement.scrollWidth > width + 1) wide.push('the page scrolls sideways');
    return wide;
  })()`);
}

describe("an app's attestation in the portal", () => {
  it('the owner monitors, reads what enforcement would refuse, then enforces and turns Basic anonymous access off', async () => {
    const app = await createSharedApp(server, 'Attested app', 'owner@example.com', 'collaborator@example.com');
    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await follow(page, () => page.getByRole('link', { name: 'Attestation' }).click());
    assert.equal(await page.locator('[data-attestation-mode]').getAttribute('data-attestation-mode'), 'off');
    assert.equal(await page.locator('[data-basic-anonymous]').getAttribute('data-basic-anonymous'), 'accepted');

    await page.getByLabel(/^Monitor/).check();
    await follow(page, () => page.getByRole('button', { name: 'Save attestation settings' }).click());
    assert.match((await page.getByRole('status').textContent()) ?? '', /saved/);
    assert.equal(await page.locator('[data-attestation-mode]').getAttribute('data-attestation-mode'), 'monitor');

    // Three clients with a proof of work, one on an old SDK without any.
    for (let client = 0; client < 3; client++) {
      const issued = await requestToken(app, anonymousFields(app), { 'x-tessera-attestation': await powAttestation(app.appUrl) });
      assert.equal(issued.status, 200, issued.text);
    }
    assert.equal((await requestToken(app, anonymousFields(app))).status, 200);
    await server.tessera.events.flush();
    await page.reload();
    const table = page.locator('[data-attestation-outcomes]');
    const total = table.locator('tbody tr').last();
    assert.equal(await total.locator('td[data-label="Proof of work"]').textContent(), '3');
    assert.equal(await total.locator('td[data-label="Missing"]').textContent(), '1');
    assert.equal(await total.locator('td[data-label="No valid one"]').textContent(), '25 %');
    assert.match((await page.locator('[data-refused-share]').textContent()) ?? '', /25 %.*would refuse/);
    await screenshots(page, 'attestation');
    await page.setViewportSize({ width: PHONE_WIDTH, height: 800 });
    assert.deepEqual(await overflowing(page), []);
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByLabel(/^Enforce/).check();
    await page.getByLabel('Accept Basic anonymous access (no token)').uncheck();
    await follow(page, () => page.getByRole('button', { name: 'Save attestation settings' }).click());
    assert.equal(await page.locator('[data-attestation-mode]').getAttribute('data-attestation-mode'), 'enforce');
    assert.equal(await page.locator('[data-basic-anonymous]').getAttribute('data-basic-anonymous'), 'refused');
    assert.equal((await requestToken(app, anonymousFields(app))).status, 401);
    assert.equal((await whoami(app.appUrl, basic(app.appId))).status, 401);
  });

  it('a mistake in the settings is said beside the form, which keeps what was typed', async () => {
    const app = await createSharedApp(server, 'Mistyped app', 'owner@example.com', 'collaborator@example.com');
    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    await page.getByLabel('Proof of work: the most attempts a challenge needs').fill('12');
    await follow(page, () => page.getByRole('button', { name: 'Save attestation settings' }).click());
    assert.match((await page.getByRole('alert').textContent()) ?? '', /powMaxAttempts must be a whole number from 100/);
    assert.equal(await page.getByLabel('Proof of work: the most attempts a challenge needs').inputValue(), '12');
  });

  it('a collaborator makes a debug token, sees it once, and it attests until revoked', async () => {
    const app = await createSharedApp(server, 'Debugged app', 'owner@example.com', 'collaborator@example.com');
    await server.tessera.apps.configure(app.appId, { anonymousAttestation: 'enforce' }, { clientAddress: null, by: 'operator' });
    const page = await signedInPage(browser, server, 'collaborator@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    await page.getByLabel('Name of a new debug token').fill('CI on main');
    await follow(page, () => page.getByRole('button', { name: 'Make a debug token' }).click());
    const token = (await page.locator('[data-debug-token]').textContent()) ?? '';
    assert.match(token, /^tdbg_/);
    await screenshots(page, 'attestation-debug-token');
    const issued = await requestToken(app, anonymousFields(app), { 'x-tessera-attestation': `debug.${token}` });
    assert.equal(issued.status, 200, issued.text);
    assert.equal((await whoami(app.appUrl, bearer(issued.body.access_token))).body.attestation, 'debug');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    assert.equal(await page.locator('[data-debug-token]').count(), 0, 'shown once');
    await follow(page, () => page.getByRole('button', { name: 'Revoke CI on main' }).click());
    assert.match((await page.getByRole('status').textContent()) ?? '', /revoked/);
    assert.equal((await requestToken(app, anonymousFields(app), { 'x-tessera-attestation': `debug.${token}` })).status, 401);
  });

  it('the owner sets App Attest and Play Integrity through their forms; a mistake keeps what was typed, never a key', async () => {
    const app = await createSharedApp(server, 'Platform app', 'owner@example.com', 'collaborator@example.com');
    await server.tessera.apps.configure(app.appId, { anonymousAttestation: 'enforce' }, OPERATOR);
    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/attestation`);
    assert.match((await page.locator('[data-platforms]').textContent()) ?? '', /App Attest not set up; Play Integrity not set up/);

    await page.getByLabel('Team ID').fill('short');
    await page.getByLabel('Bundle identifier').fill('com.example.game');
    await follow(page, () => page.getByRole('button', { name: 'Save App Attest' }).click());
    assert.match((await page.getByRole('alert').textContent()) ?? '', /teamId must be the 10-character/);
    assert.equal(await page.getByLabel('Bundle identifier').inputValue(), 'com.example.game');
    await page.getByLabel('Team ID').fill('ABCDE12345');
    await follow(page, () => page.getByRole('button', { name: 'Save App Attest' }).click());
    assert.match((await page.getByRole('status').textContent()) ?? '', /App Attest is set up/);

    const keys = playConsoleKeys();
    await page.getByLabel('Package name').fill('com.example.game');
    await page.getByLabel('Decryption key').fill(keys.decryptionKey);
    await page.getByLabel('Verification key').fill(keys.verificationKey);
    await follow(page, () => page.getByRole('button', { name: 'Save Play Integrity' }).click());
    assert.match((await page.getByRole('status').textContent()) ?? '', /Play Integrity is set up/);
    const platforms = (await page.locator('[data-platforms]').textContent()) ?? '';
    assert.match(platforms, /App Attest for ABCDE12345\.com\.example\.game \(production\); Play Integrity for com\.example\.game/);
    assert.equal((await page.content()).includes(keys.decryptionKey), false, 'the key is never shown back');
    await screenshots(page, 'attestation-platforms');

    const token = await integrityToken(keys, genuineVerdict('com.example.game', Date.now()));
    const issued = await requestToken(app, anonymousFields(app), { 'x-tessera-attestation': `android.${token}` });
    assert.equal(issued.status, 200, issued.text);
    assert.equal((await whoami(app.appUrl, bearer(issued.body.access_token))).body.attestation, 'android');
  });
});
