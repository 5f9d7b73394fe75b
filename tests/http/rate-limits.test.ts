import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_RATE_LIMITS } from '../../src/limits/rate-limits.js';
import { adminBurst } from '../helpers/admin-burst.js';
import { assertError } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminFields,
  anonymousFields,
  basic,
  request,
  requestToken,
  startServer,
  type JsonResponse,
  type TestServer,
} from '../helpers/server.js';

/**
 * The contract's limits: 429 TOO_MANY_REQUESTS with Retry-After, per client address for token requests
 * and per app for failed admin attempts; and defaults that never get in the way of normal use.
 */

const TOKEN_LIMIT = 5;
const ADMIN_FAILURE_LIMIT = 3;

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

describe('per-address limit on token requests', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ rateLimits: { enabled: true, tokenRequestsPerAddressPerMinute: TOKEN_LIMIT, adminFailuresPerAppPerMinute: 1000 } });
  });
  after(async () => server.close());

  it(`lets ${TOKEN_LIMIT} token requests from 127.0.0.1 through, then answers 429 with Retry-After`, async () => {
    const passed: JsonResponse[] = [];
    for (let i = 0; i < TOKEN_LIMIT; i++) passed.push(await requestToken(server, i % 2 === 0 ? anonymousFields(server) : adminFields(server)));
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
    const whoami = await request(`${server.appUrl}/whoami`, { headers: { authorization: basic(server.app.appId) } });
    assert.equal(whoami.status, 200, whoami.text);
  });
});

describe('per-app limit on failed admin attempts', () => {
  let server: TestServer;
  let otherApp: Awaited<ReturnType<TestServer['tessera']['apps']['create']>>;
  before(async () => {
    server = await startServer({ rateLimits: { enabled: true, tokenRequestsPerAddressPerMinute: 1000, adminFailuresPerAppPerMinute: ADMIN_FAILURE_LIMIT } });
    otherApp = await server.tessera.apps.create('Other app');
  });
  after(async () => server.close());

  const otherToken = (fields: Record<string, unknown>) =>
    request(`${server.baseUrl}/api/apps/${otherApp.appId}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basic(otherApp.appId), 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', ...fields }),
    });

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

  it('then refuses admin attempts on that app with 429 and Retry-After, even with the right secret', async () => {
    assertTooManyRequests(await requestToken(server, adminFields(server)));
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
});

describe('limits hold under concurrent requests', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ rateLimits: { enabled: true, tokenRequestsPerAddressPerMinute: 40, adminFailuresPerAppPerMinute: ADMIN_FAILURE_LIMIT } });
  });
  after(async () => server.close());

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
  let server: TestServer;
  before(async () => {
    server = await startServer({ rateLimits: DEFAULT_RATE_LIMITS });
  });
  after(async () => server.close());

  it('lets 300 token requests in a row from one address through', async () => {
    const responses: JsonResponse[] = [];
    for (let i = 0; i < 300; i++) responses.push(await requestToken(server, anonymousFields(server)));
    const refused = responses.filter((response) => response.status !== 200);
    assert.deepEqual(refused.map((r) => `${r.status} ${r.text}`), []);
  });

  it('lets 5 failed admin attempts through as 401, then issues the admin token to the right secret', async () => {
    for (let i = 0; i < 5; i++) assertError(await requestToken(server, adminFields(server, { client_secret: `${WRONG_SECRET}${i}` })), 401, 'invalid_client');
    const admin = await requestToken(server, adminFields(server));
    assert.equal(admin.status, 200, admin.text);
    assert.equal(admin.body.id, server.app.adminId);
  });

  it('throttles two dozen failed admin attempts on one app', async () => {
    const responses: JsonResponse[] = [];
    for (let i = 0; i < 24; i++) responses.push(await requestToken(server, adminFields(server, { client_secret: WRONG_SECRET })));
    const throttled = responses.filter((response) => response.status === 429);
    assert.ok(throttled.length > 0, `24 failures in a row were never throttled: ${statuses(responses).join(' ')}`);
    for (const response of throttled) assertTooManyRequests(response);
    for (const response of responses.filter((r) => r.status !== 429)) assertError(response, 401, 'invalid_client');
  });
});
