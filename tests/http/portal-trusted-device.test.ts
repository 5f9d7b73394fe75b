import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_SIGN_IN_LIMITS } from '../../src/developers/sign-in-limits.js';
import { createDeveloper, PASSWORD } from '../helpers/portal.js';
import { portalClient, type PortalClient } from '../helpers/portal-http.js';
import { NO_LIMITS, serverForSuite } from '../helpers/server.js';

// A browser that signed in to an account keeps a device cookie, which lets it sign in while
// guesses from many addresses hold the account back for every other client (docs/portal.md,
// "Throttling"). Addresses come from X-Forwarded-For, the server trusting the loopback proxy.

const server = serverForSuite({
  trustedProxies: ['loopback'],
  rateLimits: { ...NO_LIMITS, enabled: true, tokenRequestsPerAddressPerMinute: 1000 },
  signInLimits: { ...DEFAULT_SIGN_IN_LIMITS, failuresPerAccount: { points: 3, duration: 3600 } },
});

async function signIn(client: PortalClient, address: string, email: string, password: string) {
  const { csrf } = await client.page('/portal/sign-in');
  return client.send('/portal/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  });
}

describe('the device cookie of a browser that signed in', () => {
  it('lets that browser in while failures from many addresses hold the account; a forged or outdated one does not', async () => {
    const developer = await createDeveloper(server, 'trusted@example.com');
    const browser = portalClient(server);
    const first = await signIn(browser, '198.51.100.1', developer.email, PASSWORD);
    assert.equal(first.status, 303);
    const setCookie = first.headers.getSetCookie().find((line) => line.startsWith('tessera-device='));
    assert.ok(setCookie !== undefined, 'a device cookie');
    assert.match(setCookie, /HttpOnly/i);
    assert.match(setCookie, /SameSite=Strict/i);
    assert.match(setCookie, /Max-Age=15552000/);
    const device = browser.cookies.get('tessera-device')!;
    assert.ok(!device.includes(PASSWORD));
    const { csrf } = await browser.page('/portal/');
    assert.equal((await browser.post('/portal/sign-out', { _csrf: csrf })).status, 303);
    assert.equal(browser.cookies.get('tessera-device'), device, 'kept after sign-out');

    // Three guessers, each from an address of its own, use up the account's limit.
    for (const address of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      assert.equal((await signIn(portalClient(server), address, developer.email, 'a wrong password')).status, 401, address);
    }
    const stranger = await signIn(portalClient(server), '198.51.100.2', developer.email, PASSWORD);
    assert.equal(stranger.status, 429, 'a new browser is held, even with the right password');

    const forged = portalClient(server);
    const [id, nonce, mac] = device.split('.') as [string, string, string];
    forged.cookies.set('tessera-device', `${id}.${nonce.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}.${mac}`);
    assert.equal((await signIn(forged, '198.51.100.3', developer.email, PASSWORD)).status, 429, 'a forged device cookie');

    const back = await signIn(browser, '198.51.100.4', developer.email, PASSWORD);
    assert.equal(back.status, 303, 'the browser that signed in before gets in, from another address too');
    assert.match((await browser.get('/portal/')).text, /trusted@example\.com/);
    const renewed = browser.cookies.get('tessera-device')!;
    assert.notEqual(renewed, device, 'a fresh device token at every sign-in');
    // The old one still counts as well: a browser may be restored from a backup.
    assert.equal((await signIn(portalClient(server), '198.51.100.5', developer.email, PASSWORD)).status, 429);

    // The password changes: device tokens made for the old one count no more; the browser that
    // changed it gets a new one.
    const account = await browser.page('/portal/account');
    const changed = await browser.send('/portal/account/password', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '198.51.100.4' },
      body: new URLSearchParams({
        _csrf: account.csrf,
        current: PASSWORD,
        password: 'a new password, long',
        repeat: 'a new password, long',
      }).toString(),
    });
    assert.ok([200, 303].includes(changed.status), `${changed.status} ${changed.text.slice(0, 300)}`);
    const outdated = portalClient(server);
    outdated.cookies.set('tessera-device', renewed);
    assert.equal(
      (await signIn(outdated, '198.51.100.6', developer.email, 'a new password, long')).status,
      429,
      'a device token of the old password',
    );
    assert.notEqual(browser.cookies.get('tessera-device'), renewed);
    const { csrf: again } = await browser.page('/portal/');
    await browser.post('/portal/sign-out', { _csrf: again });
    assert.equal((await signIn(browser, '198.51.100.7', developer.email, 'a new password, long')).status, 303);
  });
});
