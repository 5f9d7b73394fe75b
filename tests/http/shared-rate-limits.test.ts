import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { buildServer } from '../../src/server.js';
import type { RateLimitSettings } from '../../src/limits/rate-limits.js';
import { createTessera } from '../../src/tessera.js';
import { adminBurst } from '../helpers/admin-burst.js';
import { assertError } from '../helpers/assert.js';
import { adminFields, anonymousFields, appUrlOf, basic, request, tokenRequestInit, type JsonResponse } from '../helpers/http.js';
import { listenLocally, startServer, type TestServer } from '../helpers/server.js';

/**
 * REDIS_URL: the limits hold across instances (the real Redis of `TEST_REDIS_URL`, default
 * 127.0.0.1:6379, under a key prefix of this test's own); without Redis, or while it cannot be
 * reached, each instance counts on its own and nothing waits.
 */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const UNREACHABLE_REDIS = 'redis://127.0.0.1:1';
const TOKEN_LIMIT = 6;
const ADMIN_FAILURE_LIMIT = 4;

interface Instance {
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * Another instance over the same store as `server` (so the same apps), with its own limits; it takes
 * the client address from X-Forwarded-For, as behind a proxy on loopback.
 */
async function startInstance(server: TestServer, rateLimits: RateLimitSettings): Promise<Instance> {
  const tessera = createTessera({ store: server.testStore.store, rateLimits });
  await tessera.limits.ready();
  const app = buildServer({ tessera, trustedProxies: ['loopback'] });
  return {
    baseUrl: await listenLocally(app),
    async close() {
      await app.close();
      // Its audit log writes to the shared store, which the server closes after.
      await tessera.events.close();
      await tessera.limits.close();
    },
  };
}

function tokenRequest(server: TestServer, baseUrl: string, fields: Record<string, unknown>, forwardedFor?: string): Promise<JsonResponse> {
  const headers = {
    authorization: basic(server.app.appId, 'x'),
    ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }),
  };
  return request(`${appUrlOf(baseUrl, server.app.appId)}/oauth2/token`, tokenRequestInit(server.app.appId, fields, headers));
}

/** Failed admin attempts are limited per address; the app's ceiling is out of the way unless given. */
function limits(redisUrl: string | undefined, prefix: string, adminFailuresPerAppPerMinute = 1000): RateLimitSettings {
  return {
    enabled: true,
    tokenRequestsPerAddressPerMinute: TOKEN_LIMIT,
    adminFailuresPerAddressPerMinute: ADMIN_FAILURE_LIMIT,
    adminFailuresPerAppPerMinute,
    redisUrl,
    redisKeyPrefix: prefix,
  };
}

const WRONG = 'wrong';

describe('rate limits shared through Redis', () => {
  let server: TestServer;
  const instances: Instance[] = [];
  const prefix = `tessera-test-${randomBytes(6).toString('hex')}`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true });

  before(async () => {
    await redis.connect();
    server = await startServer();
  });
  after(async () => {
    for (const instance of instances) await instance.close();
    await server.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('the per-address limit counts the requests made to every instance', async () => {
    const shared = `${prefix}-address`;
    const [a, b] = [await startInstance(server, limits(REDIS_URL, shared)), await startInstance(server, limits(REDIS_URL, shared))];
    instances.push(a, b);
    const statuses: number[] = [];
    for (let i = 0; i < TOKEN_LIMIT; i++)
      statuses.push((await tokenRequest(server, (i % 2 === 0 ? a : b).baseUrl, anonymousFields(server))).status);
    assert.deepEqual(statuses, Array(TOKEN_LIMIT).fill(200));
    for (const instance of [a, b]) {
      const refused = await tokenRequest(server, instance.baseUrl, anonymousFields(server));
      assertError(refused, 429, 'TOO_MANY_REQUESTS');
      assert.match(refused.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    }
    assert.ok((await redis.keys(`${shared}*`)).length > 0, 'the counts are in Redis, under the configured prefix');
  });

  it('failed admin attempts on one instance lock admin attempts of the app on the other', async () => {
    const shared = `${prefix}-admin`;
    const [a, b] = [
      await startInstance(server, { ...limits(REDIS_URL, shared), tokenRequestsPerAddressPerMinute: 1000 }),
      await startInstance(server, { ...limits(REDIS_URL, shared), tokenRequestsPerAddressPerMinute: 1000 }),
    ];
    instances.push(a, b);
    for (let i = 0; i < ADMIN_FAILURE_LIMIT; i++) {
      assertError(await tokenRequest(server, a.baseUrl, adminFields(server, { client_secret: 'wrong' })), 401, 'invalid_client');
    }
    assertError(await tokenRequest(server, b.baseUrl, adminFields(server)), 429, 'TOO_MANY_REQUESTS');
    assert.equal((await tokenRequest(server, b.baseUrl, anonymousFields(server))).status, 200, 'anonymous tokens are not affected');
    // Only for that address: the right secret from another one gets its token on either instance.
    for (const instance of [a, b])
      assert.equal((await tokenRequest(server, instance.baseUrl, adminFields(server), '203.0.113.8')).status, 200);
  });

  it('an IPv6 client is counted by its /64 on every instance, for both per-address limits', async () => {
    const shared = `${prefix}-ipv6`;
    const [a, b] = [await startInstance(server, limits(REDIS_URL, shared)), await startInstance(server, limits(REDIS_URL, shared))];
    instances.push(a, b);
    for (let i = 0; i < ADMIN_FAILURE_LIMIT; i++) {
      const response = await tokenRequest(
        server,
        (i % 2 === 0 ? a : b).baseUrl,
        adminFields(server, { client_secret: WRONG }),
        `2001:db8:7:7::${i + 1}`,
      );
      assertError(response, 401, 'invalid_client');
    }
    assertError(await tokenRequest(server, a.baseUrl, adminFields(server), '2001:db8:7:7:abcd::1'), 429, 'TOO_MANY_REQUESTS');
    assert.equal((await tokenRequest(server, b.baseUrl, adminFields(server), '2001:db8:7:8::1')).status, 200, 'another /64');
    // The token requests so far: ADMIN_FAILURE_LIMIT + 1 from the /64; one more is allowed.
    assert.equal((await tokenRequest(server, b.baseUrl, anonymousFields(server), '2001:db8:7:7::ffff')).status, 200);
    assertError(await tokenRequest(server, a.baseUrl, anonymousFields(server), '2001:db8:7:7::fffe'), 429, 'TOO_MANY_REQUESTS');
    const keys = await redis.keys(`${shared}*`);
    assert.ok(keys.includes(`${shared}:token-requests:2001:db8:7:7::/64`), keys.join(' '));
    assert.ok(keys.includes(`${shared}:admin-failures-by-address:${server.app.appId}:2001:db8:7:7::/64`), keys.join(' '));
  });

  it("the app's ceiling counts the failures from every address on every instance", async () => {
    const shared = `${prefix}-ceiling`;
    const ceiling = 5;
    const settings = { ...limits(REDIS_URL, shared, ceiling), tokenRequestsPerAddressPerMinute: 1000 };
    const [a, b] = [await startInstance(server, settings), await startInstance(server, settings)];
    instances.push(a, b);
    // One address past its own limit uses up only its own allowance of the ceiling.
    const loud = [];
    for (let i = 0; i < 3 * ADMIN_FAILURE_LIMIT; i++)
      loud.push(
        (await tokenRequest(server, (i % 2 === 0 ? a : b).baseUrl, adminFields(server, { client_secret: WRONG }), '198.51.100.1')).status,
      );
    assert.deepEqual(loud, [...Array(ADMIN_FAILURE_LIMIT).fill(401), ...Array(2 * ADMIN_FAILURE_LIMIT).fill(429)]);
    assert.equal((await tokenRequest(server, a.baseUrl, adminFields(server), '198.51.100.2')).status, 200);
    assertError(
      await tokenRequest(server, b.baseUrl, adminFields(server, { client_secret: WRONG }), '198.51.100.3'),
      401,
      'invalid_client',
    );
    // 5 of 5 used: every admin attempt on the app is refused now, on both instances.
    assertError(
      await tokenRequest(server, a.baseUrl, adminFields(server, { client_secret: WRONG }), '198.51.100.4'),
      429,
      'TOO_MANY_REQUESTS',
    );
    assertError(await tokenRequest(server, b.baseUrl, adminFields(server), '198.51.100.5'), 429, 'TOO_MANY_REQUESTS');
  });

  it('an X-Forwarded-For entry that is not an IP address never names a key in Redis', async () => {
    const shared = `${prefix}-names`;
    const instance = await startInstance(server, limits(REDIS_URL, shared));
    instances.push(instance);
    assertError(
      await tokenRequest(server, instance.baseUrl, adminFields(server, { client_secret: WRONG }), 'evil"<script>'),
      401,
      'invalid_client',
    );
    assertError(
      await tokenRequest(server, instance.baseUrl, adminFields(server, { client_secret: WRONG }), '203.0.113.4, not-an-address'),
      401,
      'invalid_client',
    );
    assert.deepEqual((await redis.keys(`${shared}*`)).sort(), [
      `${shared}:admin-failures-by-address:${server.app.appId}:127.0.0.1`,
      `${shared}:admin-failures:${server.app.appId}`,
      `${shared}:token-requests:127.0.0.1`,
    ]);
  });

  it('a burst released at once is counted in the order it is decided, the right secret included', async () => {
    const tessera = createTessera({ store: server.testStore.store, rateLimits: limits(REDIS_URL, `${prefix}-burst`) });
    await tessera.limits.ready();
    try {
      const record = await tessera.appCache.require(server.app.appId);
      assert.deepEqual(await adminBurst(tessera, record, server.app.clientSecret, 20, 6), [
        ...Array(ADMIN_FAILURE_LIMIT).fill('invalid_client'),
        ...Array(20 - ADMIN_FAILURE_LIMIT).fill('TOO_MANY_REQUESTS'),
      ]);
    } finally {
      await tessera.events.flush();
      await tessera.limits.close();
    }
  });

  it("a burst from many addresses is counted against the app's ceiling in the order it is decided", async () => {
    const ceiling = 5;
    const tessera = createTessera({ store: server.testStore.store, rateLimits: limits(REDIS_URL, `${prefix}-spread-burst`, ceiling) });
    await tessera.limits.ready();
    try {
      const record = await tessera.appCache.require(server.app.appId);
      const addressOf = (i: number) => (i % 2 === 0 ? `203.0.113.${i}` : `2001:db8:${i}::1`);
      assert.deepEqual(await adminBurst(tessera, record, server.app.clientSecret, 20, 8, addressOf), [
        ...Array(ceiling).fill('invalid_client'),
        ...Array(20 - ceiling).fill('TOO_MANY_REQUESTS'),
      ]);
    } finally {
      await tessera.events.flush();
      await tessera.limits.close();
    }
  });

  it('without Redis, each instance counts on its own', async () => {
    const [a, b] = [await startInstance(server, limits(undefined, prefix)), await startInstance(server, limits(undefined, prefix))];
    instances.push(a, b);
    for (const instance of [a, b]) {
      for (let i = 0; i < TOKEN_LIMIT; i++)
        assert.equal((await tokenRequest(server, instance.baseUrl, anonymousFields(server))).status, 200);
      assertError(await tokenRequest(server, instance.baseUrl, anonymousFields(server)), 429, 'TOO_MANY_REQUESTS');
    }
  });

  it('while Redis cannot be reached, requests do not wait, and each instance still limits on its own', async () => {
    const instance = await startInstance(server, limits(UNREACHABLE_REDIS, prefix));
    instances.push(instance);
    const started = Date.now();
    for (let i = 0; i < TOKEN_LIMIT; i++) {
      const response = await tokenRequest(server, instance.baseUrl, anonymousFields(server));
      assert.equal(response.status, 200, response.text);
    }
    assertError(await tokenRequest(server, instance.baseUrl, anonymousFields(server)), 429, 'TOO_MANY_REQUESTS');
    assert.ok(Date.now() - started < 2_000, `${TOKEN_LIMIT + 1} requests took ${Date.now() - started} ms`);
  });
});
