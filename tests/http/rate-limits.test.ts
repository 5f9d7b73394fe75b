import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DEFAULT_RATE_LIMITS } from '../../src/limits/rate-limits.js';
import { adminBurst } from '../helpers/admin-burst.js';
import { assertError } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import { adminFields, anonymousFields, appOn, basic, request, requestToken, whoami, type JsonResponse } from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

/**
 * The contract's limits: 429 TOO_MANY_REQUESTS with Retry-After, per client address for token requests;
 * per app and client address for failed admin attempts, under a ceiling per app; and defaults that
 * never get in the way of normal use. Servers that trust loopback take other client addresses from
 * X-Forwarded-For.
 */

const TOKEN_LIMIT = 5;
const ADMIN_FAILURE_LIMIT = 3;
const APP_CEILING = 7;

const WRONG_SECRET = 'f'.repeat(64);

function assertTooManyRequests(response: JsonResponse): void {
  assertError(response, 429, 'TOO_MANY_REQUESTS');
  const retryAfter = response.headers.get('retry-after');
  assert.match(retryAfter ?? '', /^[1-9][0-9]*$/, `Retry-After must be a positive whole number of seconds, got ${retryAfter}`);
  assert.ok(Number(retryAfter) <= 60, `Retry-After ${retryAfter} is beyond the one-minute window`);
  assert.equal(response.body.access_token, undefined);
}

/** The right admin credentials sent as `client_secret_basic` (form) and through the SDK path. */
async function adminRequestsByOtherRoutes(server: TestServer): Promise<JsonResponse[]> {
  const form = await request(`${server.appUrl}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(server.app.clientId, server.app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  const sdk = await request(`${server.baseUrl}/api/oauth2/token`, {
    method: 'POST',
    headers: { 'x-kii-appid': server.app.appId, 'x-kii-appkey': server.app.appKey, 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: server.app.clientId, client_secret: server.app.clientSecret }),
  });
  return [form, sdk];
}

function statuses(responses: JsonResponse[]): number[] {
  return responses.map((response) => response.status);
}

type CreatedApp = Awaited<ReturnType<TestServer['tessera']['apps']['create']>>;

/** An admin-token request for `app` (the right secret unless `clientSecret` is given) from `address`. */
function adminTokenFrom(server: TestServer, app: CreatedApp, address: string, clientSecret = app.clientSecret): Promise<JsonResponse> {
  const target = appOn(server, app);
  return requestToken(target, adminFields(target, { client_secret: clientSecret }), { 'x-forwarded-for': address });
}

function assertAdminToken(response: JsonResponse, app: CreatedApp): void {
  assert.equal(response.status, 200, response.text);
  assert.equal(response.body.id, app.adminId);
}

describe('per-address limit on token requests', () => {
  const server = serverForSuite({
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: TOKEN_LIMIT,
      adminFailuresPerAddressPerMinute: 1000,
      adminFailuresPerAppPerMinute: 1000,
    },
  });

  it(`lets ${TOKEN_LIMIT} token requests from 127.0.0.1 through, then answers 429 with Retry-After`, async () => {
    const passed: JsonResponse[] = [];
    for (let i = 0; i < TOKEN_LIMIT; i++)
      passed.push(await requestToken(server, i % 2 === 0 ? anonymousFields(server) : adminFields(server)));
    assert.deepEqual(statuses(passed), Array(TOKEN_LIMIT).fill(200), passed.map((r) => r.text).join('\n'));

    const refused = await requestToken(server, anonymousFields(server));
    assertTooManyRequests(refused);
    // RFC 6749 §5.1 still applies to a refusal from the token endpoint.
    assert.equal(refused.headers.get('cache-control'), 'no-store');
  });

  it('keeps refusing every variant and both token paths from that address', async () => {
    assertTooManyRequests(await requestToken(server, adminFields(server)));
    for (const response of await adminRequestsByOtherRoutes(server)) assertTooManyRequests(response);
  });

  it('cannot be dodged with X-Forwarded-For (the service does not trust proxy headers by default)', async () => {
    for (const forwarded of ['203.0.113.7', '127.0.0.2', '::1']) {
      assertTooManyRequests(await requestToken(server, anonymousFields(server), { 'x-forwarded-for': forwarded, 'x-real-ip': forwarded }));
    }
  });

  it('does not hold back the use of tokens and Basic access (only token requests are limited)', async () => {
    const me = await whoami(server.appUrl, basic(server.app.appId));
    assert.equal(me.status, 200, me.text);
  });
});

describe('per-address limit on failed admin attempts on an app', () => {
  let otherApp: CreatedApp;
  const server = serverForSuite({
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 1000,
      adminFailuresPerAddressPerMinute: ADMIN_FAILURE_LIMIT,
      adminFailuresPerAppPerMinute: 1000,
    },
    trustedProxies: ['loopback'],
  });
  before(async () => {
    otherApp = await server.tessera.apps.create('Other app');
  });

  const otherToken = (fields: Record<string, unknown>) =>
    requestToken(appOn(server, otherApp), { grant_type: 'client_credentials', ...fields });

  it(`answers the first ${ADMIN_FAILURE_LIMIT} failed admin attempts with 401 invalid_client`, async () => {
    // A wrong secret, an unknown ClientID, and a wrong secret sent as client_secret_basic all count.
    const failures = [
      await requestToken(server, adminFields(server, { client_secret: WRONG_SECRET })),
      await requestToken(server, adminFields(server, { client_id: 'a'.repeat(32) })),
      await request(`${server.appUrl}/oauth2/token`, {
        method: 'POST',
        headers: { authorization: basic(server.app.clientId, WRONG_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      }),
    ];
    assert.equal(failures.length, ADMIN_FAILURE_LIMIT);
    for (const failure of failures) {
      assertError(failure, 401, 'invalid_client');
      assert.match(failure.headers.get('www-authenticate') ?? '', /^Basic\b/);
    }
  });

  it('then refuses admin attempts on that app from that address with 429 and Retry-After, even with the right secret, saying why', async () => {
    const rightSecret = await requestToken(server, adminFields(server));
    assertTooManyRequests(rightSecret);
    assert.match(
      rightSecret.body.message as string,
      /^Too many wrong ClientSecrets were sent for this app from this address in the last minute: every admin attempt from it is refused for (\d+ seconds?|1 minute), the right secret too\. Behind a shared address/,
    );
    assertTooManyRequests(await requestToken(server, adminFields(server, { client_secret: WRONG_SECRET })));
    for (const response of await adminRequestsByOtherRoutes(server)) assertTooManyRequests(response);
  });

  it('still issues anonymous tokens on that app', async () => {
    const anonymous = await requestToken(server, anonymousFields(server));
    assert.equal(anonymous.status, 200, anonymous.text);
    assert.equal(anonymous.body.id, 'ANONYMOUS');
  });

  it("does not touch another app's admin attempts", async () => {
    const failed = await otherToken({ client_id: otherApp.clientId, client_secret: WRONG_SECRET });
    assertError(failed, 401, 'invalid_client');
    const admin = await otherToken({ client_id: otherApp.clientId, client_secret: otherApp.clientSecret });
    assert.equal(admin.status, 200, admin.text);
    assert.equal(admin.body.id, otherApp.adminId);
  });

  it('still issues the admin token to the right secret from another address, IPv4 or IPv6', async () => {
    assertAdminToken(await adminTokenFrom(server, server.app, '203.0.113.10'), server.app);
    assertAdminToken(await adminTokenFrom(server, server.app, '2001:db8:5::1'), server.app);
    // The locked-out address stays locked out meanwhile.
    assertTooManyRequests(await requestToken(server, adminFields(server)));
  });

  it('counts each address on its own', async () => {
    const address = '198.51.100.4';
    for (let i = 0; i < ADMIN_FAILURE_LIMIT; i++)
      assertError(await adminTokenFrom(server, server.app, address, WRONG_SECRET), 401, 'invalid_client');
    assertTooManyRequests(await adminTokenFrom(server, server.app, address, WRONG_SECRET));
    assertTooManyRequests(await adminTokenFrom(server, server.app, address));
    assertAdminToken(await adminTokenFrom(server, server.app, '198.51.100.5'), server.app);
  });

  it('counts an IPv6 client by its /64, however it writes the address', async () => {
    for (const address of ['2001:db8:1:2::a', '2001:DB8:1:2:FFFF:FFFF:FFFF:FFFF', '2001:0db8:0001:0002:0:0:0:3']) {
      assertError(await adminTokenFrom(server, server.app, address, WRONG_SECRET), 401, 'invalid_client');
    }
    assertTooManyRequests(await adminTokenFrom(server, server.app, '2001:db8:1:2:1234::5', WRONG_SECRET));
    assertTooManyRequests(await adminTokenFrom(server, server.app, '2001:db8:1:2::77'));
    assertAdminToken(await adminTokenFrom(server, server.app, '2001:db8:1:3::a'), server.app);
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', async () => {
    for (const address of ['192.0.2.44', '::ffff:192.0.2.44', '::FFFF:c000:022c']) {
      assertError(await adminTokenFrom(server, server.app, address, WRONG_SECRET), 401, 'invalid_client');
    }
    assertTooManyRequests(await adminTokenFrom(server, server.app, '192.0.2.44'));
  });
});

describe('per-app ceiling on failed admin attempts', () => {
  const server = serverForSuite({
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 1000,
      adminFailuresPerAddressPerMinute: ADMIN_FAILURE_LIMIT,
      adminFailuresPerAppPerMinute: APP_CEILING,
    },
    trustedProxies: ['loopback'],
  });

  it(`stops a guess spread over many addresses after ${APP_CEILING} failures, the right secret from a fresh address included`, async () => {
    const app = await server.tessera.apps.create('Distributed guess');
    const addresses = Array.from({ length: APP_CEILING }, (_, i) => (i % 2 === 0 ? `203.0.113.${i + 1}` : `2001:db8:${i}::1`));
    for (const address of addresses) assertError(await adminTokenFrom(server, app, address, WRONG_SECRET), 401, 'invalid_client');
    assertTooManyRequests(await adminTokenFrom(server, app, '198.51.100.200', WRONG_SECRET));
    const fresh = await adminTokenFrom(server, app, '198.51.100.201');
    assertTooManyRequests(fresh);
    assert.match(fresh.body.message as string, /^Too many wrong ClientSecrets were sent for this app in the last minute, from any address/);
    const target = appOn(server, app);
    const anonymous = await requestToken(target, anonymousFields(target), { 'x-forwarded-for': '198.51.100.202' });
    assert.equal(anonymous.status, 200, 'anonymous tokens are not affected');
  });

  it("does not let one address past its own limit use up the app's ceiling", async () => {
    const app = await server.tessera.apps.create('One loud address');
    const loud = await Promise.all(
      Array.from({ length: 3 * APP_CEILING }, () => adminTokenFrom(server, app, '203.0.113.66', WRONG_SECRET)),
    );
    assert.equal(loud.filter((response) => response.status === 401).length, ADMIN_FAILURE_LIMIT, statuses(loud).join(' '));
    // 3 of the app's 7 are used: 3 more failures elsewhere still leave room for the right secret.
    for (const address of ['203.0.113.67', '203.0.113.68', '2001:db8:68::1']) {
      assertError(await adminTokenFrom(server, app, address, WRONG_SECRET), 401, 'invalid_client');
    }
    assertAdminToken(await adminTokenFrom(server, app, '203.0.113.69'), app);
  });

  it('counts a burst from many addresses in the order it is decided, the right secret included', async () => {
    const app = await createConfiguredApp(server, {}, 'Distributed burst');
    const record = await server.tessera.appCache.require(app.appId);
    assert.deepEqual(await adminBurst(server.tessera, record, app.clientSecret, 30, 10, (i) => `203.0.113.${100 + i}`), [
      ...Array(APP_CEILING).fill('invalid_client'),
      ...Array(30 - APP_CEILING).fill('TOO_MANY_REQUESTS'),
    ]);
  });
});

describe('limits hold under concurrent requests', () => {
  const server = serverForSuite({
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 40,
      adminFailuresPerAddressPerMinute: ADMIN_FAILURE_LIMIT,
      adminFailuresPerAppPerMinute: 1000,
    },
  });

  it(`lets no more than ${ADMIN_FAILURE_LIMIT} of 30 simultaneous wrong guesses be checked (no check-then-record race)`, async () => {
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => requestToken(server, adminFields(server, { client_secret: `${WRONG_SECRET}${i}` }))),
    );
    const checked = responses.filter((response) => response.status === 401);
    const throttled = responses.filter((response) => response.status === 429);
    assert.equal(checked.length + throttled.length, 30, statuses(responses).join(' '));
    assert.ok(checked.length <= ADMIN_FAILURE_LIMIT, `${checked.length} wrong secrets were checked, the limit is ${ADMIN_FAILURE_LIMIT}`);
    for (const response of throttled) assertTooManyRequests(response);
  });

  it('counts failures in the order they are decided, also when a burst is released at once (as a shared app read does)', async () => {
    const app = await createConfiguredApp(server, {}, 'Burst');
    const record = await server.tessera.appCache.require(app.appId);
    assert.deepEqual(await adminBurst(server.tessera, record, app.clientSecret, 30, 10), [
      ...Array(ADMIN_FAILURE_LIMIT).fill('invalid_client'),
      ...Array(30 - ADMIN_FAILURE_LIMIT).fill('TOO_MANY_REQUESTS'),
    ]);
  });

  it('lets exactly the per-address allowance through when requests arrive together', async () => {
    // 30 used above; 10 are left of the 40.
    const responses = await Promise.all(Array.from({ length: 25 }, () => requestToken(server, anonymousFields(server))));
    assert.equal(responses.filter((r) => r.status === 200).length, 10, statuses(responses).join(' '));
    for (const response of responses.filter((r) => r.status !== 200)) assertTooManyRequests(response);
  });
});

describe('default limits never get in the way of normal use', () => {
  const server = serverForSuite({ rateLimits: DEFAULT_RATE_LIMITS, trustedProxies: ['loopback'] });

  it('lets 300 token requests in a row from one address through', async () => {
    const responses: JsonResponse[] = [];
    for (let i = 0; i < 300; i++) responses.push(await requestToken(server, anonymousFields(server)));
    const refused = responses.filter((response) => response.status !== 200);
    assert.deepEqual(
      refused.map((r) => `${r.status} ${r.text}`),
      [],
    );
  });

  it('lets 5 failed admin attempts through as 401, then issues the admin token to the right secret', async () => {
    for (let i = 0; i < 5; i++)
      assertError(await requestToken(server, adminFields(server, { client_secret: `${WRONG_SECRET}${i}` })), 401, 'invalid_client');
    const admin = await requestToken(server, adminFields(server));
    assert.equal(admin.status, 200, admin.text);
    assert.equal(admin.body.id, server.app.adminId);
  });

  it('throttles two dozen failed admin attempts on one app from one address', async () => {
    const responses: JsonResponse[] = [];
    for (let i = 0; i < 24; i++) responses.push(await requestToken(server, adminFields(server, { client_secret: WRONG_SECRET })));
    const throttled = responses.filter((response) => response.status === 429);
    assert.ok(throttled.length > 0, `24 failures in a row were never throttled: ${statuses(responses).join(' ')}`);
    for (const response of throttled) assertTooManyRequests(response);
    for (const response of responses.filter((r) => r.status !== 429)) assertError(response, 401, 'invalid_client');
  });

  it('meanwhile issues the admin token to the right secret from another address', async () => {
    assertAdminToken(await adminTokenFrom(server, server.app, '203.0.113.1'), server.app);
  });
});
