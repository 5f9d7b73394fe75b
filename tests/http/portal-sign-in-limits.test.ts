import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeveloper, PASSWORD } from '../helpers/portal.js';
import { portalClient, signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { NO_LIMITS, serverForSuite } from '../helpers/server.js';

// The sign-in limits under a burst: guesses sent at the same time are counted before their
// password is hashed, so at most a limit's worth of them are checked (401) and the rest are refused
// at once (429). The server runs with the default sign-in limits (docs/portal.md, "Throttling");
// client addresses come from X-Forwarded-For, the server trusting the loopback proxy.

const server = serverForSuite({
  trustedProxies: ['loopback'],
  rateLimits: { ...NO_LIMITS, enabled: true, tokenRequestsPerAddressPerMinute: 100_000 },
});

/** `count` sign-ins of `email` with a wrong password, all sent at once from `address`; their statuses. */
async function burst(client: PortalClient, address: string, email: string, count: number): Promise<number[]> {
  const { csrf } = await client.page('/portal/sign-in');
  const body = new URLSearchParams({ _csrf: csrf, email, password: 'not the password at all' }).toString();
  const headers = { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address };
  const answers = await Promise.all(Array.from({ length: count }, () => client.send('/portal/sign-in', { method: 'POST', headers, body })));
  return answers.map((answer) => answer.status);
}

function tally(statuses: number[]): { checked: number; refused: number } {
  const unexpected = statuses.filter((status) => status !== 401 && status !== 429);
  assert.deepEqual(unexpected, [], 'only 401 (password checked) and 429 (refused before any hashing)');
  return { checked: statuses.filter((status) => status === 401).length, refused: statuses.filter((status) => status === 429).length };
}

describe('sign-in limits under a burst', () => {
  it('checks at most 10 passwords of 60 guesses sent at once from one address at one account', async () => {
    const developer = await createDeveloper(server, 'burst-one@example.com');
    const { checked, refused } = tally(await burst(portalClient(server), '198.51.100.10', developer.email, 60));
    assert.ok(checked <= 10, `${checked} passwords checked`);
    assert.ok(checked >= 1, 'the first guesses are checked');
    assert.equal(checked + refused, 60);
    // The limit holds that client afterwards, and no other.
    const held = portalClient(server);
    const { csrf } = await held.page('/portal/sign-in');
    const after = await held.send('/portal/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '198.51.100.10' },
      body: new URLSearchParams({ _csrf: csrf, email: developer.email, password: PASSWORD }).toString(),
    });
    assert.equal(after.status, 429);
    assert.ok(Number(after.headers.get('retry-after')) > 0);
    assert.match(after.text, /role="alert">Too many failed attempts: try again in 1[45] minutes\./, 'when, in words');
    await signInOverHttp(server, developer.email);
  });

  it('checks at most 50 passwords of 300 guesses at one account sent at once from 30 addresses', async () => {
    const developer = await createDeveloper(server, 'burst-many@example.com');
    const addresses = Array.from({ length: 30 }, (_, i) => `203.0.113.${i + 1}`);
    const statuses = (await Promise.all(addresses.map((address) => burst(portalClient(server), address, developer.email, 10)))).flat();
    const { checked, refused } = tally(statuses);
    assert.ok(checked <= 50, `${checked} passwords checked`);
    assert.ok(checked >= 1);
    assert.equal(checked + refused, 300);
  });

  it('checks at most 10 current passwords of 40 password changes sent at once', async () => {
    const developer = await createDeveloper(server, 'burst-change@example.com');
    const browser = await signInOverHttp(server, developer.email);
    const { csrf } = await browser.page('/portal/account');
    const body = new URLSearchParams({
      _csrf: csrf,
      current: 'not the password at all',
      password: 'a new password, long',
      repeat: 'a new password, long',
    }).toString();
    const headers = { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '198.51.100.20' };
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => browser.send('/portal/account/password', { method: 'POST', headers, body })),
    );
    const refused = answers.filter((answer) => answer.status === 429).length;
    const checked = answers.length - refused;
    assert.deepEqual(
      answers.filter((answer) => answer.status !== 429 && answer.status !== 400 && answer.status !== 401).map((answer) => answer.status),
      [],
    );
    assert.ok(checked <= 10, `${checked} current passwords checked`);
    assert.ok(checked >= 1);
  });
});
