import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { buildServer } from '../../src/http/server.js';
import type { RateLimitSettings } from '../../src/limits/rate-limits.js';
import { createTessera } from '../../src/tessera.js';
import { adminBurst } from '../helpers/admin-burst.js';
import { assertError } from '../helpers/assert.js';
import { adminFields, anonymousFields, listenLocally, request, startServer, type JsonResponse, type TestServer } from '../helpers/server.js';

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

/** Another instance over the same store as `server` (so the same apps), with its own limits. */
async function startInstance(server: TestServer, rateLimits: RateLimitSettings): Promise<Instance> {
  const tessera = createTessera({ store: server.testStore.store, rateLimits });
  await tessera.limits.ready();
  const app = buildServer({ tessera });
  return {
    baseUrl: await listenLocally(app),
    async close() {
      await app.close();
      await tessera.limits.close();
    },
  };
}

function tokenRequest(server: TestServer, baseUrl: string, fields: Record<string, unknown>): Promise<JsonResponse> {
  return request(`${baseUrl}/api/apps/${server.app.appId}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${server.app.appId}:x`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify(fields),
  });
}

function limits(redisUrl: string | undefined, prefix: string): RateLimitSettings {
  return { enabled: true, tokenRequestsPerAddressPerMinute: TOKEN_LIMIT, adminFailuresPerAppPerMinute: ADMIN_FAILURE_LIMIT, redisUrl, redisKeyPrefix: prefix };
}

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
    for (let i = 0; i < TOKEN_LIMIT; i++) statuses.push((await tokenRequest(server, (i % 2 === 0 ? a : b).baseUrl, anonymousFields(server))).status);
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
    const [a, b] = [await startInstance(server, { ...limits(REDIS_URL, shared), tokenRequestsPerAddressPerMinute: 1000 }), await startInstance(server, { ...limits(REDIS_URL, shared), tokenRequestsPerAddressPerMinute: 1000 })];
    instances.push(a, b);
    for (let i = 0; i < ADMIN_FAILURE_LIMIT; i++) {
      assertError(await tokenRequest(server, a.baseUrl, adminFields(server, { client_secret: 'wrong' })), 401, 'invalid_client');
    }
    assertError(await tokenRequest(server, b.baseUrl, adminFields(server)), 429, 'TOO_MANY_REQUESTS');
    assert.equal((await tokenRequest(server, b.baseUrl, anonymousFields(server))).status, 200, 'anonymous tokens are not affected');
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

  it('without Redis, each instance counts on its own', async () => {
    const [a, b] = [await startInstance(server, limits(undefined, prefix)), await startInstance(server, limits(undefined, prefix))];
    instances.push(a, b);
    for (const instance of [a, b]) {
      for (let i = 0; i < TOKEN_LIMIT; i++) assert.equal((await tokenRequest(server, instance.baseUrl, anonymousFields(server))).status, 200);
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
