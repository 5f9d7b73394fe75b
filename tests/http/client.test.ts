import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { TesseraClient, TesseraClientError, type AdminOptions, type TesseraClientOptions } from 'tessera-tokens/internal/client/client.js';
import type * as ClientModule from 'tessera-tokens/internal/client/client.js';
import { CLIENT_SCRIPT_PATH } from '../../src/http/paths.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertInvalidToken } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { appOn, bearer, request, requestAs, revokeToken, whoami, type AppEndpoint } from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

// tessera-tokens/client against the real server: token requests over real HTTP, the server's answers read
// by the client. A fetch that counts token requests is the only thing put between them. Where time
// matters, the server and the client share one fake clock (renewal before expiry), or both run on
// the real clock across a real expiry.

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The global fetch, counting the requests to token endpoints. */
function countingFetch() {
  const counted = { tokenRequests: 0, requests: 0 };
  const fetch = (input: Request) => {
    counted.requests++;
    if (new URL(input.url).pathname.endsWith('/oauth2/token')) counted.tokenRequests++;
    return globalThis.fetch(input);
  };
  return { counted, fetch };
}

/** The options of one mode, without where the app is (`clientOf` adds it). */
type ModeOptions = TesseraClientOptions extends infer Options
  ? Options extends unknown
    ? Omit<Options, 'baseUrl' | 'appId'>
    : never
  : never;

function clientOf(server: TestServer, app: AppEndpoint, options: ModeOptions) {
  const { counted, fetch } = countingFetch();
  const client = new TesseraClient({ baseUrl: server.baseUrl, appId: app.appId, fetch, ...options });
  return { client, counted };
}

const anonymous = (app: AppEndpoint): ModeOptions => ({ mode: 'anonymous', appKey: app.appKey });
const admin = (app: AppEndpoint, extra: Partial<Omit<AdminOptions, 'baseUrl' | 'appId' | 'mode'>> = {}): ModeOptions => ({
  mode: 'admin',
  clientId: app.clientId,
  clientSecret: app.clientSecret,
  ...extra,
});

describe('tessera-tokens/client on the real clock', () => {
  let app: AppEndpoint;
  const server = serverForSuite();
  before(async () => {
    app = appOn(server, server.app);
  });

  it('anonymous: one token, obtained once and kept, for any number of concurrent calls', async () => {
    const { client, counted } = clientOf(server, app, anonymous(app));
    const answers = await Promise.all(Array.from({ length: 100 }, () => client.whoami()));
    assert.equal(counted.tokenRequests, 1);
    for (const answer of answers)
      assert.deepEqual(answer, { appId: app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null });
    await client.whoami();
    assert.equal(counted.tokenRequests, 1);
    assert.equal((await whoami(app.appUrl, await client.authorization())).status, 200);
  });

  it('Basic anonymous: the header alone, no token request', async () => {
    const { client, counted } = clientOf(server, app, { mode: 'basic' });
    assert.deepEqual(await client.whoami(), { appId: app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'basic', expiresAt: null });
    assert.match(await client.authorization(), /^Basic /);
    await assert.rejects(client.token(), TypeError);
    assert.equal(counted.tokenRequests, 0);
  });

  it('admin: a token with a short expiry (default one hour), one token request for 100 concurrent calls', async () => {
    const { client, counted } = clientOf(server, app, admin(app));
    const before = Date.now();
    const answers = await Promise.all(Array.from({ length: 100 }, () => client.whoami()));
    assert.equal(counted.tokenRequests, 1);
    const { expiresAt } = answers[0]!;
    assert.ok(expiresAt !== null && expiresAt >= before + 3_600_000 && expiresAt <= Date.now() + 3_600_000, `expiresAt ${expiresAt}`);
    for (const answer of answers)
      assert.deepEqual(answer, { appId: app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt });
    // An admin feature, with the admin token.
    const described = await client.json<{ appId: string }>(client.appUrl);
    assert.equal(described.appId, app.appId);
  });

  it("admin with a credential's ClientID and a scope: tokens with only that scope; asking for more than the credential has is invalid_scope", async () => {
    const credential = await server.tessera.credentials.create(
      app.appId,
      { name: 'Client test', scopes: ['app:read', 'events:read'] },
      OPERATOR,
    );
    const withCredential = { clientId: credential.clientId, clientSecret: credential.clientSecret };
    const { client } = clientOf(server, app, admin(app, { ...withCredential, scope: ['events:read'] }));
    const me = await client.json<{ scope?: string; clientId?: string }>(`${client.appUrl}/whoami`);
    assert.equal(me.scope, 'events:read');
    assert.equal(me.clientId, credential.clientId);
    const refused = await client.fetch(client.appUrl);
    assert.equal(refused.status, 403, 'app:read was not asked for');
    const everything = clientOf(server, app, admin(app, withCredential)).client;
    assert.equal((await everything.json<{ scope?: string }>(`${everything.appUrl}/whoami`)).scope, 'app:read events:read');
    const tooMuch = clientOf(server, app, admin(app, { ...withCredential, scope: ['tokens:revoke'] })).client;
    await assert.rejects(tooMuch.whoami(), (error: unknown) => error instanceof TesseraClientError && error.errorCode === 'invalid_scope');
    assert.throws(() => clientOf(server, app, admin(app, { ...withCredential, scope: [] })), TypeError);
  });

  it('admin across a real expiry: a 2 s token is renewed, and the expired one is refused by the server', async () => {
    const { client, counted } = clientOf(server, app, admin(app, { adminTokenLifetimeSeconds: 2 }));
    const first = await client.token();
    const firstWho = await client.whoami();
    assert.ok(firstWho.expiresAt !== null && firstWho.expiresAt - Date.now() <= 2_000);
    await sleep(firstWho.expiresAt - Date.now() + 200);
    assertInvalidToken(await whoami(app.appUrl, bearer(first)), first);

    const after = await client.whoami();
    assert.equal(after.principal, 'admin');
    assert.ok(after.expiresAt !== null && after.expiresAt > firstWho.expiresAt);
    assert.notEqual(await client.token(), first);
    assert.equal(counted.tokenRequests, 2);
  });

  it('a token the server finds expired while the client still holds it: 401 INVALID_TOKEN, one renewal, one more try', async () => {
    // The app's anonymous tokens live 2 s; the client's clock stands still, so it takes an expired
    // token for a live one.
    const limited = appOn(server, await server.tessera.apps.create('Short anonymous tokens'));
    await server.tessera.apps.configure(limited.appId, { anonymousTokenMaxLifetimeSeconds: 2 }, OPERATOR);
    const { client, counted } = clientOf(server, limited, { ...anonymous(limited), clock: new FakeClock(Date.now()) });
    const first = await client.token();
    await sleep(2_200);
    assertInvalidToken(await whoami(limited.appUrl, bearer(first)), first);
    assert.equal(await client.token(), first, 'the client still holds the first token');
    const response = await client.fetch(`${client.appUrl}/whoami`);
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(((await response.json()) as { auth: string }).auth, 'bearer');
    assert.equal(counted.tokenRequests, 2);
    assert.notEqual(await client.token(), first);
  });

  it("admin tokens from a machine whose clock is 10 minutes behind: the expiry is counted from the server's time", async () => {
    const behind = { now: () => Date.now() - 600_000 };
    const { client, counted } = clientOf(server, app, admin(app, { adminTokenLifetimeSeconds: 60, clock: behind }));
    const who = await client.whoami();
    assert.equal(who.principal, 'admin');
    assert.ok(who.expiresAt !== null && Math.abs(who.expiresAt - (Date.now() + 60_000)) < 2_000, `expiresAt ${who.expiresAt}`);
    assert.equal(counted.tokenRequests, 2, 'one refused (expiresAt in the past), one counted from the server time');
  });

  for (const [kind, options] of [
    ['anonymous', anonymous],
    ['admin', admin],
  ] as const) {
    it(`a revoked ${kind} token: the next call gets a new token once, then goes on (100 concurrent calls)`, async () => {
      const { client, counted } = clientOf(server, app, options(app));
      const revoked = await client.token();
      assert.equal((await revokeToken(app.appUrl, revoked)).status, 200);
      assertInvalidToken(await whoami(app.appUrl, bearer(revoked)));
      const answers = await Promise.all(Array.from({ length: 100 }, () => client.fetch('/api/apps/' + app.appId + '/whoami')));
      for (const answer of answers) assert.equal(answer.status, 200);
      assert.equal(counted.tokenRequests, 2, 'one token, then one renewal for every call that met the revoked token');
      assert.notEqual(await client.token(), revoked);
    });
  }

  it('typed errors with the contract codes: a wrong secret, an unknown app, an admin feature without admin', async () => {
    const wrong = clientOf(server, app, admin({ ...app, clientSecret: 'not-the-secret' })).client;
    await assert.rejects(wrong.whoami(), (error: unknown) => {
      assert.ok(error instanceof TesseraClientError);
      assert.deepEqual([error.errorCode, error.status, error.retryAfter], ['invalid_client', 401, null]);
      assert.ok(error.message.length > 0 && !error.message.includes('not-the-secret'));
      return true;
    });
    const unknown = clientOf(server, { ...app, appId: '0123456789abcdef' }, { mode: 'basic' }).client;
    await assert.rejects(unknown.whoami(), { name: 'TesseraClientError', errorCode: 'APP_NOT_FOUND', status: 404 });
    const notAdmin = clientOf(server, app, anonymous(app)).client;
    await assert.rejects(notAdmin.json(notAdmin.appUrl), { errorCode: 'ADMIN_REQUIRED', status: 403 });
    // fetch itself answers what the server answered.
    assert.equal((await notAdmin.fetch(notAdmin.appUrl)).status, 403);
  });

  it('never sends the credentials to another origin', async () => {
    const { client, counted } = clientOf(server, app, anonymous(app));
    await assert.rejects(client.fetch('http://127.0.0.2:9/elsewhere'), TypeError);
    await assert.rejects(client.fetch('https://example.org/'), TypeError);
    assert.equal(counted.requests, 0);
    const allowed = clientOf(server, app, { ...anonymous(app), backendOrigins: [server.baseUrl.replace('127.0.0.1', 'localhost')] }).client;
    const response = await allowed.fetch(`${server.baseUrl.replace('127.0.0.1', 'localhost')}/api/apps/${app.appId}/whoami`);
    assert.equal(response.status, 200);
  });

  it("refuses admin credentials in a web page up front (the seed's rule 2), and sends nothing", async () => {
    const global = globalThis as { document?: unknown };
    global.document = {};
    try {
      const { fetch, counted } = countingFetch();
      assert.throws(() => new TesseraClient({ baseUrl: server.baseUrl, appId: app.appId, fetch, ...admin(app) }), {
        name: 'TesseraClientError',
        errorCode: 'unauthorized_client',
        status: 0,
        message: /server-side code/,
      });
      const page = new TesseraClient({ baseUrl: server.baseUrl, appId: app.appId, fetch, mode: 'anonymous', appKey: app.appKey });
      assert.equal((await page.whoami()).principal, 'anonymous');
      assert.equal(counted.tokenRequests, 1);
    } finally {
      delete global.document;
    }
  });
});

describe('tessera-tokens/client renewal, on a clock shared with the server', () => {
  const clock = new FakeClock();
  let app: AppEndpoint;
  const server = serverForSuite({ clock });
  before(async () => {
    app = appOn(server, server.app);
  });

  it('renews an admin token once its renewal margin begins, in the background, once for 100 concurrent calls', async () => {
    const { client, counted } = clientOf(server, app, admin(app, { clock, adminTokenLifetimeSeconds: 600, renewBeforeSeconds: 60 }));
    const start = clock.now();
    const first = await client.token();
    assert.equal((await client.whoami()).expiresAt, start + 600_000);

    clock.time = start + 540_000 - 1; // 60 s and 1 ms before the expiry: not yet
    await Promise.all(Array.from({ length: 100 }, () => client.whoami()));
    assert.equal(counted.tokenRequests, 1);

    clock.time = start + 540_000;
    const during = await Promise.all(Array.from({ length: 100 }, () => client.token()));
    assert.ok(
      during.every((token) => token === first),
      'the held token is used while the new one is obtained',
    );
    assert.equal(counted.tokenRequests, 2);
    let renewed = first;
    for (let tries = 0; renewed === first && tries < 100; tries++) {
      await sleep(10);
      renewed = await client.token();
    }
    assert.notEqual(renewed, first);
    assert.equal((await client.whoami()).expiresAt, start + 540_000 + 600_000);
    assert.equal(counted.tokenRequests, 2);
    // The first token still works until its own expiry.
    assert.equal((await whoami(app.appUrl, bearer(first))).status, 200);
  });

  it('an expired token is not used: every concurrent call waits for the one new token', async () => {
    const { client, counted } = clientOf(server, app, admin(app, { clock, adminTokenLifetimeSeconds: 60 }));
    const first = await client.token();
    clock.advance(60_000);
    const tokens = new Set(await Promise.all(Array.from({ length: 100 }, () => client.token())));
    assert.equal(tokens.size, 1);
    assert.ok(!tokens.has(first));
    assert.equal(counted.tokenRequests, 2);
  });

  it('renews an anonymous token that the app gave a maximum lifetime', async () => {
    const limited = appOn(server, await server.tessera.apps.create('Short anonymous tokens'));
    await server.tessera.apps.configure(limited.appId, { anonymousTokenMaxLifetimeSeconds: 120 }, OPERATOR);
    const { client, counted } = clientOf(server, limited, { ...anonymous(limited), clock });
    const first = await client.token();
    clock.advance(120_000);
    assert.notEqual(await client.token(), first);
    assert.equal((await client.whoami()).expiresAt, clock.now() + 120_000);
    assert.equal(counted.tokenRequests, 2);
  });
});

describe('tessera-tokens/client and Retry-After, against the real rate limits', () => {
  let app: AppEndpoint;
  const server = serverForSuite({
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 1,
      adminFailuresPerAddressPerMinute: 10,
      adminFailuresPerAppPerMinute: 100,
    },
  });
  before(async () => {
    app = appOn(server, server.app);
    // The address's one token request of the minute.
    const { client } = clientOf(server, app, anonymous(app));
    await client.token();
  });

  it('waits what Retry-After says, at most maxAttempts tries, then throws TOO_MANY_REQUESTS with retryAfter', async () => {
    const waits: number[] = [];
    const { client, counted } = clientOf(server, app, {
      ...anonymous(app),
      sleep: async (ms: number) => void waits.push(ms),
      retry: { maxAttempts: 3, maxWaitSeconds: 60 },
    });
    await assert.rejects(client.whoami(), (error: unknown) => {
      assert.ok(error instanceof TesseraClientError);
      assert.deepEqual([error.errorCode, error.status], ['TOO_MANY_REQUESTS', 429]);
      assert.ok(error.retryAfter !== null && error.retryAfter >= 1 && error.retryAfter <= 60, `retryAfter ${error.retryAfter}`);
      return true;
    });
    assert.equal(counted.tokenRequests, 3);
    assert.equal(waits.length, 2);
    for (const wait of waits) assert.ok(wait >= 1_000 && wait <= 60_000, `waited ${wait} ms`);
  });

  it('does not wait longer than maxWaitSeconds: one try', async () => {
    const waits: number[] = [];
    const { client, counted } = clientOf(server, app, {
      ...anonymous(app),
      sleep: async (ms: number) => void waits.push(ms),
      retry: { maxWaitSeconds: 0 },
    });
    await assert.rejects(client.token(), { errorCode: 'TOO_MANY_REQUESTS' });
    assert.deepEqual([counted.tokenRequests, waits.length], [1, 0]);
  });
});

describe(`the client as the server serves it (GET ${CLIENT_SCRIPT_PATH})`, () => {
  const server = serverForSuite();

  const built = () => readFileSync(new URL(import.meta.resolve('tessera-tokens/client')), 'utf8');

  it('is the built module without its source-map comment, as JavaScript any origin may load, with an ETag', async () => {
    const response = await request(`${server.baseUrl}${CLIENT_SCRIPT_PATH}`, { headers: { origin: 'https://app.example.com' } });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.equal(response.headers.get('access-control-allow-credentials'), null);
    assert.match(response.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);
    assert.match(response.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]{43}"$/);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    const file = built();
    assert.match(file, /\n\/\/# sourceMappingURL=client\.js\.map$/);
    assert.equal(response.text, file.replace(/\/\/# sourceMappingURL=client\.js\.map$/, ''));
    assert.doesNotMatch(response.text, /^\s*import\b|\bimport\s*\(|\brequire\(/m, 'the served module imports nothing');
  });

  it('answers 304 to its ETag, HEAD like GET, and 405 to other methods', async () => {
    const url = `${server.baseUrl}${CLIENT_SCRIPT_PATH}`;
    const etag = (await request(url)).headers.get('etag')!;
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const revalidated = await request(url, { headers: { 'if-none-match': ifNoneMatch } });
      assert.equal(revalidated.status, 304, ifNoneMatch);
      assert.equal(revalidated.text, '');
      assert.equal(revalidated.headers.get('etag'), etag);
    }
    assert.equal((await request(url, { headers: { 'if-none-match': '"other"' } })).status, 200);
    const head = await request(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const post = await request(url, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
  });

  it('imports in Node as it is served, and works: an anonymous token and whoami', async () => {
    const served = (await request(`${server.baseUrl}${CLIENT_SCRIPT_PATH}`)).text;
    const module = (await import(`data:text/javascript;base64,${Buffer.from(served).toString('base64')}`)) as typeof ClientModule;
    assert.deepEqual(Object.keys(module).sort(), ['TesseraClient', 'TesseraClientError']);
    const client = new module.TesseraClient({
      baseUrl: server.baseUrl,
      appId: server.app.appId,
      mode: 'anonymous',
      appKey: server.app.appKey,
    });
    const who = await client.whoami();
    assert.deepEqual([who.principal, who.auth], ['anonymous', 'bearer']);
    assert.equal((await requestAs(`${server.appUrl}/whoami`, await client.authorization())).status, 200);
  });
});
