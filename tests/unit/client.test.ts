import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TesseraClient, TesseraClientError, type TesseraClientOptions, type TokenStorage } from 'tessera-tokens/internal/client/client.js';
import { FakeClock } from '../helpers/clock.js';

// The client's own logic, with time and the network in the test's hands: which answers it tries
// again and how long it waits, how often it renews, what it keeps. A scripted service answers each
// request in turn; tests/http/client.test.ts runs the client against the real server.

const BASE = 'https://tessera.example.com';
const APP_ID = '0123456789abcdef';

interface Scripted {
  url: string;
  method: string;
  authorization: string | null;
  body: string;
}

/** A service that answers token requests with a new token (or `tokenAnswer`) and others with `answers`, in turn. */
function scriptedService(
  options: { answers?: Array<() => Response>; tokenAnswer?: () => Response | Promise<Response>; expiresIn?: number } = {},
) {
  const requests: Scripted[] = [];
  const answers = [...(options.answers ?? [])];
  let issued = 0;
  const fetch = async (request: Request): Promise<Response> => {
    requests.push({
      url: request.url,
      method: request.method,
      authorization: request.headers.get('authorization'),
      body: await request.text(),
    });
    if (request.url.endsWith('/oauth2/token')) {
      if (options.tokenAnswer !== undefined) return options.tokenAnswer();
      issued++;
      return Response.json({
        id: 'ANONYMOUS',
        access_token: `token-${issued}`,
        expires_in: options.expiresIn ?? 2147483646,
        token_type: 'bearer',
      });
    }
    const next = answers.shift();
    return next === undefined ? Response.json({ ok: true }) : next();
  };
  return { fetch, requests, tokenRequests: () => requests.filter((request) => request.url.endsWith('/oauth2/token')) };
}

function errorAnswer(status: number, code: string, headers: Record<string, string> = {}): Response {
  return Response.json({ errorCode: code, error: code, error_description: code, message: code }, { status, headers });
}

function clientWith(service: ReturnType<typeof scriptedService>, extra: Partial<TesseraClientOptions> = {}) {
  const clock = new FakeClock();
  const waits: number[] = [];
  const client = new TesseraClient({
    baseUrl: BASE,
    appId: APP_ID,
    mode: 'anonymous',
    appKey: 'app-key',
    fetch: service.fetch,
    clock,
    sleep: async (ms) => {
      waits.push(ms);
      clock.advance(ms);
    },
    ...extra,
  } as TesseraClientOptions);
  return { client, clock, waits };
}

describe('Retry-After', () => {
  it('a 503 with Retry-After is tried again after that wait, with the same method, body and a fresh header', async () => {
    const service = scriptedService({ answers: [() => errorAnswer(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '2' })] });
    const { client, waits } = clientWith(service);
    const response = await client.fetch('/api/things', {
      method: 'POST',
      body: JSON.stringify({ a: 1 }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(response.status, 200);
    assert.deepEqual(waits, [2000]);
    const sent = service.requests.filter((request) => request.url === `${BASE}/api/things`);
    assert.deepEqual(
      sent.map((request) => [request.method, request.body, request.authorization]),
      [
        ['POST', '{"a":1}', 'Bearer token-1'],
        ['POST', '{"a":1}', 'Bearer token-1'],
      ],
    );
  });

  it('is bounded: at most maxAttempts tries, then the last answer', async () => {
    const always429 = Array.from({ length: 10 }, () => () => errorAnswer(429, 'TOO_MANY_REQUESTS', { 'retry-after': '1' }));
    const service = scriptedService({ answers: always429 });
    const { client, waits } = clientWith(service, { retry: { maxAttempts: 4 } });
    const response = await client.fetch('/api/things');
    assert.equal(response.status, 429);
    assert.deepEqual(waits, [1000, 1000, 1000]);
    assert.equal(service.requests.length - service.tokenRequests().length, 4);
    await assert.rejects(client.json('/api/things'), { errorCode: 'TOO_MANY_REQUESTS', status: 429, retryAfter: 1 });
  });

  it('does not wait past maxWaitSeconds, nor without Retry-After, nor for other statuses', async () => {
    for (const [answer, retry] of [
      [() => errorAnswer(429, 'TOO_MANY_REQUESTS', { 'retry-after': '31' }), {}],
      [() => errorAnswer(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '5' }), { maxWaitSeconds: 4 }],
      [() => errorAnswer(503, 'SERVICE_UNAVAILABLE'), {}],
      [() => errorAnswer(429, 'TOO_MANY_REQUESTS', { 'retry-after': 'soon' }), {}],
      [() => errorAnswer(500, 'INTERNAL_ERROR', { 'retry-after': '1' }), {}],
      [() => errorAnswer(429, 'TOO_MANY_REQUESTS', { 'retry-after': '1' }), { maxAttempts: 1 }],
    ] as const) {
      const service = scriptedService({ answers: [answer] });
      const { client, waits } = clientWith(service, { retry });
      const response = await client.fetch('/api/things');
      assert.notEqual(response.status, 200);
      assert.deepEqual(waits, []);
    }
  });

  it('reads an HTTP date by the injected clock', async () => {
    const clock = new FakeClock();
    const date = new Date(clock.now() + 7_000).toUTCString();
    const service = scriptedService({ answers: [() => errorAnswer(503, 'SERVICE_UNAVAILABLE', { 'retry-after': date })] });
    const waits: number[] = [];
    const client = new TesseraClient({
      baseUrl: BASE,
      appId: APP_ID,
      mode: 'basic',
      fetch: service.fetch,
      clock,
      sleep: async (ms) => void waits.push(ms),
    });
    assert.equal((await client.fetch('/api/things')).status, 200);
    assert.deepEqual(waits, [7000]);
  });

  it('applies to token requests too, and a refused token request is a typed error', async () => {
    let tries = 0;
    const service = scriptedService({
      tokenAnswer: () => (++tries < 3 ? errorAnswer(429, 'TOO_MANY_REQUESTS', { 'retry-after': '3' }) : errorAnswer(401, 'invalid_client')),
    });
    const { client, waits } = clientWith(service);
    await assert.rejects(
      client.token(),
      (error: unknown) => error instanceof TesseraClientError && error.errorCode === 'invalid_client' && error.status === 401,
    );
    assert.deepEqual(waits, [3000, 3000]);
  });
});

describe('INVALID_TOKEN', () => {
  it('renews once and tries once more; a second INVALID_TOKEN is answered as it is', async () => {
    const invalid = () => errorAnswer(401, 'INVALID_TOKEN', { 'www-authenticate': 'Bearer error="invalid_token"' });
    const service = scriptedService({ answers: [invalid, invalid, invalid] });
    const { client } = clientWith(service);
    const response = await client.fetch('/api/things');
    assert.equal(response.status, 401);
    assert.equal(((await response.json()) as { errorCode: string }).errorCode, 'INVALID_TOKEN', 'the answer is still readable');
    assert.deepEqual(
      service.requests.map((request) => `${new URL(request.url).pathname} ${request.authorization}`),
      [
        `/api/apps/${APP_ID}/oauth2/token ${'Basic ' + btoa(`${APP_ID}:app-key`)}`,
        '/api/things Bearer token-1',
        `/api/apps/${APP_ID}/oauth2/token ${'Basic ' + btoa(`${APP_ID}:app-key`)}`,
        '/api/things Bearer token-2',
      ],
    );
  });

  it('is told by the body alone too (a proxy may drop WWW-Authenticate), and not by other 401s', async () => {
    const service = scriptedService({
      answers: [() => Response.json({ errorCode: 'INVALID_TOKEN' }, { status: 401 }), () => errorAnswer(401, 'UNAUTHORIZED')],
    });
    const { client } = clientWith(service);
    assert.equal((await client.fetch('/api/things')).status, 401);
    assert.equal(service.tokenRequests().length, 2);
  });

  it('is not looked for in Basic mode', async () => {
    const service = scriptedService({ answers: [() => errorAnswer(401, 'INVALID_TOKEN')] });
    const client = new TesseraClient({ baseUrl: BASE, appId: APP_ID, mode: 'basic', fetch: service.fetch });
    assert.equal((await client.fetch('/api/things')).status, 401);
    assert.deepEqual(
      service.requests.map((request) => request.authorization),
      [`Basic ${btoa(`${APP_ID}:anonymous`)}`],
    );
  });
});

describe('renewal', () => {
  it('one token request for 100 concurrent callers, also while it is slow', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let issued = 0;
    const service = scriptedService({
      tokenAnswer: async () => {
        await released;
        issued++;
        return Response.json({ id: 'x', access_token: `token-${issued}`, expires_in: 3600, token_type: 'bearer' });
      },
    });
    const { client } = clientWith(service, { mode: 'admin', clientId: 'id', clientSecret: 'secret' });
    const calls = Array.from({ length: 100 }, () => client.token());
    await new Promise((resolve) => setImmediate(resolve));
    release();
    assert.deepEqual(new Set(await Promise.all(calls)), new Set(['token-1']));
    assert.equal(service.tokenRequests().length, 1);
  });

  it('asks for admin tokens with expiresAt = now + adminTokenLifetimeSeconds, and renews them in the last quarter or renewBeforeSeconds', async () => {
    const service = scriptedService({ expiresIn: 120 });
    const { client, clock } = clientWith(service, {
      mode: 'admin',
      clientId: 'id',
      clientSecret: 'secret',
      adminTokenLifetimeSeconds: 120,
      renewBeforeSeconds: 60,
    });
    const start = clock.now();
    assert.equal(await client.token(), 'token-1');
    assert.deepEqual(JSON.parse(service.tokenRequests()[0]!.body), {
      grant_type: 'client_credentials',
      client_id: 'id',
      client_secret: 'secret',
      expiresAt: start + 120_000,
    });
    assert.equal(service.tokenRequests()[0]!.authorization, `Basic ${btoa(`${APP_ID}:`)}`);
    // 120 s of life: the margin is a quarter of it (30 s), less than renewBeforeSeconds.
    clock.time = start + 90_000 - 1;
    assert.equal(await client.token(), 'token-1');
    assert.equal(service.tokenRequests().length, 1);
    clock.time = start + 90_000;
    assert.equal(await client.token(), 'token-1', 'the held token while the new one comes');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(await client.token(), 'token-2');
    assert.equal(service.tokenRequests().length, 2);
  });

  it('after a failed renewal in the background, waits before the next one, and uses the held token meanwhile', async () => {
    let fail = false;
    let issued = 0;
    const service = scriptedService({
      tokenAnswer: () =>
        fail
          ? errorAnswer(401, 'invalid_client')
          : Response.json({ access_token: `token-${++issued}`, expires_in: 600, token_type: 'bearer' }),
    });
    const { client, clock } = clientWith(service, {
      mode: 'admin',
      clientId: 'id',
      clientSecret: 'secret',
      adminTokenLifetimeSeconds: 600,
    });
    const start = clock.now();
    await client.token();
    fail = true;
    clock.time = start + 540_000; // the last 60 s
    for (let i = 0; i < 50; i++) {
      assert.equal(await client.token(), 'token-1');
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(service.tokenRequests().length, 2, 'one failed renewal, then a pause');
    clock.advance(5_000);
    fail = false;
    await client.token();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(await client.token(), 'token-2');
    // Past its expiry, a token is never used: the caller waits for a new one, and gets the error.
    fail = true;
    clock.advance(600_000);
    await assert.rejects(client.token(), { errorCode: 'invalid_client' });
  });

  it('keeps an anonymous token in the given storage, and forgets it from there when it is refused', async () => {
    const stored = new Map<string, string>();
    const storage: TokenStorage = {
      getItem: (key) => stored.get(key) ?? null,
      setItem: (key, value) => void stored.set(key, value),
      removeItem: (key) => void stored.delete(key),
    };
    const first = scriptedService();
    assert.equal(await clientWith(first, { storage }).client.token(), 'token-1');
    assert.equal(stored.size, 1);
    // A new page load: the token is taken from the storage, no request.
    const second = scriptedService({ answers: [() => errorAnswer(401, 'INVALID_TOKEN')] });
    const { client } = clientWith(second, { storage });
    assert.equal(await client.token(), 'token-1');
    assert.equal(second.tokenRequests().length, 0);
    await client.fetch('/api/things');
    assert.equal(second.tokenRequests().length, 1);
    assert.match(stored.values().next().value!, /"accessToken":"token-1"/);
    // Admin tokens are never stored.
    const adminService = scriptedService();
    await clientWith(adminService, {
      mode: 'admin',
      clientId: 'id',
      clientSecret: 'secret',
      storage,
    } as Partial<TesseraClientOptions>).client.token();
    assert.equal(stored.size, 1);
  });
});

describe('options', () => {
  it('refuses what cannot work, before any request', () => {
    const fetch = async () => assert.fail('no request');
    for (const options of [
      { mode: 'anonymous', appKey: '' },
      { mode: 'admin', clientId: 'id', clientSecret: '' },
      { mode: 'admin', clientId: 'id', clientSecret: 'secret', adminTokenLifetimeSeconds: 0 },
      { mode: 'basic', retry: { maxAttempts: 0 } },
      { mode: 'basic', retry: { maxWaitSeconds: Number.POSITIVE_INFINITY } },
      { mode: 'user' },
      { mode: 'basic', appId: '' },
      { mode: 'basic', baseUrl: 'not a url' },
    ]) {
      assert.throws(
        () => new TesseraClient({ baseUrl: BASE, appId: APP_ID, fetch, ...options } as TesseraClientOptions),
        TypeError,
        JSON.stringify(options),
      );
    }
  });

  it('keeps a path prefix of baseUrl in appUrl', () => {
    const client = new TesseraClient({ baseUrl: 'https://example.com/auth/', appId: 'a b', mode: 'basic' });
    assert.equal(client.appUrl, 'https://example.com/auth/api/apps/a%20b');
  });
});
