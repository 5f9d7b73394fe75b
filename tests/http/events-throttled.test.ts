import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { adminFields, appOn, bearer, countTotalsOf, requestAs, requestToken, type JsonResponse } from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

/**
 * Admin attempts refused (429) by the limits on failed admin attempts are counted as
 * `token.throttled` (reason: the limit, `address` or `app`), never stored as rows: a brute force on
 * the ClientSecret shows at its full size in the counts, and costs no storage per attempt.
 */

const ADDRESS_LIMIT = 3;
const APP_CEILING = 5;
const WRONG_SECRET = 'f'.repeat(64);

const server = serverForSuite({
  rateLimits: {
    enabled: true,
    tokenRequestsPerAddressPerMinute: 1000,
    adminFailuresPerAddressPerMinute: ADDRESS_LIMIT,
    adminFailuresPerAppPerMinute: APP_CEILING,
  },
  trustedProxies: ['loopback'],
});

type CreatedApp = Awaited<ReturnType<TestServer['tessera']['apps']['create']>>;

function attempt(app: CreatedApp, address: string, clientSecret = WRONG_SECRET): Promise<JsonResponse> {
  const target = appOn(server, app);
  return requestToken(target, adminFields(target, { client_secret: clientSecret }), { 'x-forwarded-for': address });
}

/** `countTotalsOf` the app's counts, once the events so far are written. */
async function totalsOf(app: CreatedApp, token: string): Promise<Record<string, number>> {
  await server.tessera.events.flush();
  return countTotalsOf(await requestAs(`${appOn(server, app).appUrl}/events/counts?per=minute`, bearer(token)));
}

/** Every row of the app's log (both classes), through the store. */
async function rowsOf(app: CreatedApp): Promise<number> {
  await server.tessera.events.flush();
  return (await server.tessera.events.list(app.appId, { limit: 500 })).events.length;
}

describe('admin attempts throttled by the failed-admin limits', () => {
  it('are counted as token.throttled (address): refusals plus throttled make every attempt, and no row is added per throttled one', async () => {
    const app = await server.tessera.apps.create('Guessed from one address');
    // An admin token from another address, to read the counts with; it is an audit row of its own.
    const token = (await attempt(app, '198.51.100.1', app.clientSecret)).body.access_token as string;
    assert.ok(token);
    const N = 40;
    const statuses: number[] = [];
    let rowsAfterRefusals = 0;
    for (let i = 0; i < N; i++) {
      const response = await attempt(app, '203.0.113.9');
      statuses.push(response.status);
      if (response.status === 429) assertError(response, 429, 'TOO_MANY_REQUESTS');
      if (i === ADDRESS_LIMIT - 1) rowsAfterRefusals = await rowsOf(app);
    }
    // The right secret from the throttled address is throttled too, and counted so.
    assertError(await attempt(app, '203.0.113.9', app.clientSecret), 429, 'TOO_MANY_REQUESTS');
    assert.deepEqual(statuses, [...Array(ADDRESS_LIMIT).fill(401), ...Array(N - ADDRESS_LIMIT).fill(429)]);

    const totals = await totalsOf(app, token);
    assert.equal(totals['token.refused attempted:admin invalid_client'], ADDRESS_LIMIT);
    assert.equal(totals['token.throttled attempted:admin address'], N - ADDRESS_LIMIT + 1);
    assert.equal(totals['token.refused attempted:admin invalid_client'] + totals['token.throttled attempted:admin address'], N + 1);
    assert.equal(totals['token.throttled attempted:admin app'], undefined);

    assert.equal(rowsAfterRefusals, 1 + ADDRESS_LIMIT, 'the admin token issued and the refusals are rows');
    assert.equal(await rowsOf(app), rowsAfterRefusals, 'no row per throttled attempt');
  });

  it("are counted with reason app past the app's ceiling", async () => {
    const app = await server.tessera.apps.create('Guessed from many addresses');
    const token = (await attempt(app, '198.51.100.2', app.clientSecret)).body.access_token as string;
    const addresses = Array.from({ length: 12 }, (_, i) => `203.0.113.${100 + i}`);
    const statuses: number[] = [];
    for (const address of addresses) statuses.push((await attempt(app, address)).status);
    assert.deepEqual(statuses, [...Array(APP_CEILING).fill(401), ...Array(addresses.length - APP_CEILING).fill(429)]);
    const totals = await totalsOf(app, token);
    assert.equal(totals['token.refused attempted:admin invalid_client'], APP_CEILING);
    assert.equal(totals['token.throttled attempted:admin app'], addresses.length - APP_CEILING);
    assert.equal(await rowsOf(app), 1 + APP_CEILING);
  });

  it('are listed by no page of the log: ?type=token.throttled answers no events, as for anonymous tokens', async () => {
    const app = await server.tessera.apps.create('Listed');
    const token = (await attempt(app, '198.51.100.3', app.clientSecret)).body.access_token as string;
    for (let i = 0; i < ADDRESS_LIMIT + 2; i++) await attempt(app, '203.0.113.50');
    await server.tessera.events.flush();
    const listed = await requestAs(`${appOn(server, app).appUrl}/events?type=token.throttled`, bearer(token));
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.events, []);
    assert.equal((await totalsOf(app, token))['token.throttled attempted:admin address'], 2);
  });

  it('are not counted for an app that does not exist', async () => {
    const ghost = { ...(await server.tessera.apps.create('Ghost')) };
    await server.tessera.apps.delete(ghost.appId, OPERATOR);
    for (let i = 0; i < ADDRESS_LIMIT + 2; i++) assert.notEqual((await attempt(ghost, '203.0.113.77')).status, 200);
    await server.tessera.events.flush();
    const counts = await server.tessera.events.counts(ghost.appId, {
      per: 'minute',
      since: Date.now() - 3_600_000,
      until: Date.now() + 60_000,
    });
    assert.deepEqual(counts.totals, []);
  });
});
