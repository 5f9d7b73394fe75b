import assert from 'node:assert/strict';
import { before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CreatedApp } from '../../src/apps/service.js';
import { MAX_BODY_BYTES } from '../../src/server.js';
import { assertError, assertInvalidToken } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminFields,
  anonymousFields,
  basic,
  bearer,
  formBody,
  request,
  requestToken,
  tokenUrl,
  whoami,
  type JsonResponse,
} from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

// The contract's "The token endpoint" and "Errors" sections (429 is covered elsewhere), through a
// real listening server.

const NEVER_EXPIRES_IN = 2147483646;
const TOKEN_KEYS = ['id', 'access_token', 'expires_in', 'token_type'];
const URL_SAFE = /^[A-Za-z0-9._~-]+$/;

/** POST a raw body to the app's token endpoint; the Basic header of the app unless headers say otherwise. */
function postToken(server: TestServer, body: string, headers: Record<string, string>): Promise<JsonResponse> {
  return request(tokenUrl(server), {
    method: 'POST',
    headers: { authorization: basic(server.app.appId), ...headers },
    body,
  });
}

/** A successful token response, checked completely against the contract. */
function assertTokenResponse(response: JsonResponse, id: string): { accessToken: string; expiresIn: number } {
  assert.equal(response.status, 200, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json(;|$)/);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.equal(response.headers.get('pragma'), 'no-cache');
  // Exactly these keys, in this order in the raw text.
  assert.deepEqual(Object.keys(JSON.parse(response.text) as object), TOKEN_KEYS);
  const body = response.body as Record<string, unknown>;
  assert.equal(body.id, id);
  assert.equal(body.token_type, 'bearer');
  assert.equal(typeof body.access_token, 'string');
  const accessToken = body.access_token as string;
  assert.match(accessToken, URL_SAFE);
  assert.ok(accessToken.length <= 512, `token of ${accessToken.length} characters`);
  // At least 128 bits of entropy needs at least 22 base64url characters.
  assert.ok(accessToken.length >= 22, `token of ${accessToken.length} characters`);
  assert.ok(Number.isSafeInteger(body.expires_in), `expires_in ${String(body.expires_in)}`);
  return { accessToken, expiresIn: body.expires_in as number };
}

/** assertError, plus: the body echoes none of the given secrets. */
function assertRefused(response: JsonResponse, status: number, code: string, secrets: string[] = []): void {
  assertError(response, status, code);
  for (const secret of secrets) assert.ok(!response.text.includes(secret), `error body echoes a secret: ${response.text}`);
}

function assertBasicChallenge(response: JsonResponse): void {
  assert.match(response.headers.get('www-authenticate') ?? '', /^Basic(\s|$)/, 'WWW-Authenticate: Basic');
}

describe('token endpoint: success', () => {
  const server = serverForSuite();

  it('issues an admin token with exactly id, access_token, expires_in, token_type', async () => {
    const response = await requestToken(server, adminFields(server));
    const { accessToken, expiresIn } = assertTokenResponse(response, server.app.adminId);
    assert.equal(expiresIn, NEVER_EXPIRES_IN);
    assert.notEqual(response.body.id, server.app.clientSecret);
    assert.ok(!response.text.includes(server.app.clientSecret));
    const me = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(me.status, 200);
    assert.equal(me.body.principal, 'admin');
  });

  it('issues an anonymous token with id ANONYMOUS', async () => {
    const response = await requestToken(server, anonymousFields(server));
    const { accessToken, expiresIn } = assertTokenResponse(response, 'ANONYMOUS');
    assert.equal(expiresIn, NEVER_EXPIRES_IN);
    const me = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(me.status, 200);
    assert.equal(me.body.principal, 'anonymous');
  });

  it('yields a new token on every request', async () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 5; i++) {
      tokens.add(assertTokenResponse(await requestToken(server, adminFields(server)), server.app.adminId).accessToken);
      tokens.add(assertTokenResponse(await requestToken(server, anonymousFields(server)), 'ANONYMOUS').accessToken);
    }
    assert.equal(tokens.size, 10);
  });

  it('accepts a form-urlencoded body, expiresAt as a decimal string', async () => {
    const expiresAt = Date.now() + 3_600_000;
    const admin = await postToken(server, formBody(adminFields(server, { expiresAt })), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    const { accessToken, expiresIn } = assertTokenResponse(admin, server.app.adminId);
    assert.ok(expiresIn >= 3595 && expiresIn <= 3600, `expires_in ${expiresIn}`);
    const me = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(me.body.expiresAt, expiresAt);

    const anonymous = await postToken(server, formBody(anonymousFields(server)), {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    });
    assert.equal(assertTokenResponse(anonymous, 'ANONYMOUS').expiresIn, NEVER_EXPIRES_IN);
  });

  it('accepts the SDK media type application/vnd.kii.OauthTokenRequest+json', async () => {
    const admin = await postToken(server, JSON.stringify(adminFields(server)), {
      'content-type': 'application/vnd.kii.OauthTokenRequest+json',
    });
    assertTokenResponse(admin, server.app.adminId);
    const anonymous = await postToken(server, JSON.stringify(anonymousFields(server)), {
      'content-type': 'application/vnd.kii.OauthTokenRequest+json; charset=utf-8',
    });
    assertTokenResponse(anonymous, 'ANONYMOUS');
  });

  it('accepts application/json; charset=utf-8', async () => {
    const response = await postToken(server, JSON.stringify(adminFields(server)), {
      'content-type': 'application/json; charset=utf-8',
    });
    assertTokenResponse(response, server.app.adminId);
  });

  it('accepts RFC 6749 client_secret_basic: Basic base64(ClientID:ClientSecret) and grant_type only', async () => {
    const response = await postToken(server, 'grant_type=client_credentials', {
      authorization: basic(server.app.clientId, server.app.clientSecret),
      'content-type': 'application/x-www-form-urlencoded',
    });
    const { accessToken } = assertTokenResponse(response, server.app.adminId);
    const me = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(me.body.principal, 'admin');
    assert.equal(me.body.id, server.app.adminId);
  });

  it('refuses client_secret_basic with a wrong secret: 401 invalid_client, WWW-Authenticate: Basic', async () => {
    const wrong = `${server.app.clientSecret.slice(0, -4)}0000`;
    const response = await postToken(server, 'grant_type=client_credentials', {
      authorization: basic(server.app.clientId, wrong),
      'content-type': 'application/x-www-form-urlencoded',
    });
    assertRefused(response, 401, 'invalid_client', [wrong, server.app.clientSecret]);
    assertBasicChallenge(response);
  });

  it('issues a token that never expires when expiresAt is absent', async () => {
    const response = await requestToken(server, adminFields(server));
    const { accessToken, expiresIn } = assertTokenResponse(response, server.app.adminId);
    assert.equal(expiresIn, NEVER_EXPIRES_IN);
    const me = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(me.status, 200);
    assert.equal(me.body.expiresAt, null);
  });

  it('lets a token expire in real time (no fake clock)', async () => {
    const expiresAt = Date.now() + 1200;
    const response = await requestToken(server, anonymousFields(server, { expiresAt }));
    const { accessToken, expiresIn } = assertTokenResponse(response, 'ANONYMOUS');
    assert.ok(expiresIn === 0 || expiresIn === 1, `expires_in ${expiresIn}`);
    const before = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(before.status, 200);
    assert.equal(before.body.expiresAt, expiresAt);
    await sleep(Math.max(0, expiresAt - Date.now()) + 300);
    const afterExpiry = await whoami(server.appUrl, bearer(accessToken));
    assertError(afterExpiry, 401, 'INVALID_TOKEN');
  });

  it('answers 200 concurrent token requests with 200 distinct working tokens', async () => {
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => requestToken(server, i % 2 === 0 ? adminFields(server) : anonymousFields(server))),
    );
    const tokens = responses.map(
      (response, i) => assertTokenResponse(response, i % 2 === 0 ? server.app.adminId : 'ANONYMOUS').accessToken,
    );
    assert.equal(new Set(tokens).size, 200);
    const checks = await Promise.all(tokens.map((token) => whoami(server.appUrl, bearer(token))));
    checks.forEach((check, i) => {
      assert.equal(check.status, 200, check.text);
      assert.equal(check.body.principal, i % 2 === 0 ? 'admin' : 'anonymous');
    });
  });

  it('ignores unknown query parameters', async () => {
    const response = await request(`${tokenUrl(server)}?disable_cache=${Date.now()}&foo=bar`, {
      method: 'POST',
      headers: { authorization: basic(server.app.appId), 'content-type': 'application/json' },
      body: JSON.stringify(adminFields(server)),
    });
    assertTokenResponse(response, server.app.adminId);
  });

  it('ignores unknown body fields (JSON and form)', async () => {
    const extra = { scope: 'everything', foo: 'bar', nested: { a: 1 }, list: [1, 2] };
    assertTokenResponse(await requestToken(server, adminFields(server, extra)), server.app.adminId);
    assertTokenResponse(await requestToken(server, anonymousFields(server, extra)), 'ANONYMOUS');
    const formResponse = await postToken(server, formBody(adminFields(server, { scope: 'x', foo: 'bar' })), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    assertTokenResponse(formResponse, server.app.adminId);
  });

  it('anonymous: client_secret must be present and non-empty, but its value is not checked', async () => {
    const { client_secret: _secret, ...withoutSecret } = anonymousFields(server);
    assertRefused(await requestToken(server, withoutSecret), 400, 'invalid_request');
    assertRefused(await requestToken(server, anonymousFields(server, { client_secret: '' })), 400, 'invalid_request');
    const anyKey = await requestToken(server, anonymousFields(server, { client_secret: 'not-the-app-key' }));
    assertTokenResponse(anyKey, 'ANONYMOUS');
  });

  it('anonymous with requireAppKey on: a wrong AppKey is 401 invalid_client, the right one works', async () => {
    // No API updates an app's configuration yet: the app is written into the store with it.
    const strict = await createConfiguredApp(server, { requireAppKey: true });
    const post = (fields: Record<string, unknown>) =>
      requestToken(strict, { grant_type: 'client_credentials', client_id: strict.appId, ...fields });
    const wrong = await post({ client_secret: 'not-the-app-key' });
    assertRefused(wrong, 401, 'invalid_client', ['not-the-app-key', strict.appKey]);
    assertBasicChallenge(wrong);
    assertTokenResponse(await post({ client_secret: strict.appKey }), 'ANONYMOUS');
  });
});

describe('token endpoint: expiry (fake clock)', () => {
  const clock = new FakeClock();
  const start = clock.time;
  const server = serverForSuite({ clock });
  beforeEach(() => {
    clock.time = start;
  });

  it('expires_in is the whole seconds from now to expiresAt, rounded down', async () => {
    const cases: [number, number][] = [
      [86_400_000, 86400],
      [1500, 1],
      [999, 0],
      [1000, 1],
      [61_999, 61],
    ];
    for (const [ahead, expected] of cases) {
      const admin = await requestToken(server, adminFields(server, { expiresAt: clock.now() + ahead }));
      assert.equal(assertTokenResponse(admin, server.app.adminId).expiresIn, expected, `expiresAt now+${ahead}`);
      const anonymous = await requestToken(server, anonymousFields(server, { expiresAt: clock.now() + ahead }));
      assert.equal(assertTokenResponse(anonymous, 'ANONYMOUS').expiresIn, expected, `expiresAt now+${ahead}`);
    }
  });

  it('expires_in of a form body is computed the same way', async () => {
    const response = await postToken(server, formBody(adminFields(server, { expiresAt: clock.now() + 86_400_000 })), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    assert.equal(assertTokenResponse(response, server.app.adminId).expiresIn, 86400);
  });

  it('a token requested to expire at T works at T-1 and is refused at T and after', async () => {
    const expiresAt = clock.now() + 60_000;
    const admin = assertTokenResponse(await requestToken(server, adminFields(server, { expiresAt })), server.app.adminId);
    const anonymous = assertTokenResponse(await requestToken(server, anonymousFields(server, { expiresAt })), 'ANONYMOUS');
    for (const token of [admin.accessToken, anonymous.accessToken]) {
      clock.time = expiresAt - 1;
      const works = await whoami(server.appUrl, bearer(token));
      assert.equal(works.status, 200, works.text);
      assert.equal(works.body.expiresAt, expiresAt);
      for (const when of [expiresAt, expiresAt + 1, expiresAt + 86_400_000]) {
        clock.time = when;
        const refused = await whoami(server.appUrl, bearer(token));
        assertInvalidToken(refused, token);
      }
    }
  });

  it('a token without expiresAt still works far in the future', async () => {
    const { accessToken } = assertTokenResponse(await requestToken(server, adminFields(server)), server.app.adminId);
    clock.advance(100 * 365 * 86_400_000);
    assert.equal((await whoami(server.appUrl, bearer(accessToken))).status, 200);
  });

  it('refuses expiresAt in the past or equal to now: 400 invalid_request', async () => {
    for (const expiresAt of [clock.now(), clock.now() - 1, clock.now() - 86_400_000, 0]) {
      assertRefused(await requestToken(server, adminFields(server, { expiresAt })), 400, 'invalid_request', [server.app.clientSecret]);
      assertRefused(await requestToken(server, anonymousFields(server, { expiresAt })), 400, 'invalid_request');
    }
    // now+1 is the first instant accepted.
    const first = await requestToken(server, adminFields(server, { expiresAt: clock.now() + 1 }));
    assert.equal(assertTokenResponse(first, server.app.adminId).expiresIn, 0);
  });

  it("enforces the app's maximum lifetime per token kind", async () => {
    // No API updates an app's configuration yet: the app is written into the store with it.
    const limited = await createConfiguredApp(server, {
      adminTokenMaxLifetimeSeconds: 3600,
      anonymousTokenMaxLifetimeSeconds: 60,
    });
    const post = (fields: Record<string, unknown>) => requestToken(limited, { grant_type: 'client_credentials', ...fields });
    const admin = { client_id: limited.clientId, client_secret: limited.clientSecret };
    const anonymous = { client_id: limited.appId, client_secret: limited.appKey };

    assert.equal(assertTokenResponse(await post({ ...admin, expiresAt: clock.now() + 3_600_000 }), limited.adminId).expiresIn, 3600);
    assertRefused(await post({ ...admin, expiresAt: clock.now() + 3_600_001 }), 400, 'invalid_request', [limited.clientSecret]);
    assert.equal(assertTokenResponse(await post({ ...anonymous, expiresAt: clock.now() + 60_000 }), 'ANONYMOUS').expiresIn, 60);
    assertRefused(await post({ ...anonymous, expiresAt: clock.now() + 60_001 }), 400, 'invalid_request');

    // Without expiresAt, the token gets the maximum (docs/openapi.json), and stops working then.
    const capped = assertTokenResponse(await post(admin), limited.adminId);
    assert.equal(capped.expiresIn, 3600);
    const me = await whoami(limited.appUrl, bearer(capped.accessToken));
    assert.equal(me.body.expiresAt, clock.now() + 3_600_000);
    clock.time = start + 3_600_000;
    assertError(await whoami(limited.appUrl, bearer(capped.accessToken)), 401, 'INVALID_TOKEN');
    clock.time = start;
    assert.equal(assertTokenResponse(await post(anonymous), 'ANONYMOUS').expiresIn, 60);

    // The default app has no maximum.
    assert.equal(assertTokenResponse(await requestToken(server, adminFields(server)), server.app.adminId).expiresIn, NEVER_EXPIRES_IN);
  });
});

describe('token endpoint: errors', () => {
  const server = serverForSuite();
  /** Another app, whose ClientID, AppID and secrets are wrong for this one. */
  let other: CreatedApp;
  /** An admin token of the app, sent where a Basic header belongs. */
  let accessToken: string;
  before(async () => {
    other = await server.tessera.apps.create('Other app');
    accessToken = assertTokenResponse(await requestToken(server, adminFields(server)), server.app.adminId).accessToken;
  });

  const json = { 'content-type': 'application/json' };
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const admin = (extra: Record<string, unknown>) => requestToken(server, adminFields(server, extra));
  const anonymous = (extra: Record<string, unknown>) => requestToken(server, anonymousFields(server, extra));
  const adminForm = (extra: Record<string, unknown>) => postToken(server, formBody(adminFields(server, extra)), form);
  const without = (fields: Record<string, unknown>, name: string) =>
    Object.fromEntries(Object.entries(fields).filter(([key]) => key !== name));
  const wrongSecret = () => `${server.app.clientSecret.slice(0, -1)}${server.app.clientSecret.endsWith('0') ? '1' : '0'}`;
  const now = Date.now();
  const tokenPaths = [
    ['the token path', () => tokenUrl(server)],
    ['the SDK token path', () => `${server.baseUrl}/api/oauth2/token`],
  ] as const;

  interface Refusal {
    name: string;
    send: () => Promise<JsonResponse>;
    status: number;
    code: string;
    /** Besides the app's ClientSecret, what the answer must not echo. */
    secrets?: () => string[];
    /** The answer carries `WWW-Authenticate: Basic`. */
    challenge?: 'basic';
    /** The `Allow` header a 405 carries. */
    allow?: string;
    message?: RegExp;
  }

  const refusals: Refusal[] = [
    // --- Malformed JSON -------------------------------------------------------------------------------------
    ...[
      `{"grant_type":"client_credentials","client_id":"x","client_secret":`,
      '{grant_type: client_credentials}',
      `{"grant_type":"client_credentials"}}`,
      'not json at all',
      '',
    ].map((body) => ({
      name: `malformed JSON ${JSON.stringify(body)}`,
      send: () => postToken(server, body, json),
      status: 400,
      code: 'invalid_request',
    })),
    {
      name: 'malformed JSON holding the ClientSecret',
      send: () => postToken(server, JSON.stringify(adminFields(server)).slice(0, -1), json),
      status: 400,
      code: 'invalid_request',
    },

    // --- Non-object JSON ------------------------------------------------------------------------------------
    ...['[]', '"client_credentials"', '123', 'null', 'true'].map((body) => ({
      name: `non-object JSON ${body}`,
      send: () => postToken(server, body, json),
      status: 400,
      code: 'invalid_request',
    })),
    {
      name: 'non-object JSON: an array of the right object',
      send: () => postToken(server, JSON.stringify([adminFields(server)]), json),
      status: 400,
      code: 'invalid_request',
    },

    // --- Missing fields ---------------------------------------------------------------------------------------
    ...(['admin', 'anonymous'] as const).flatMap((kind) =>
      ['grant_type', 'client_id', 'client_secret'].flatMap((name): Refusal[] => {
        const fields = () => without(kind === 'admin' ? adminFields(server) : anonymousFields(server), name);
        return [
          { name: `${kind} without ${name} (JSON)`, send: () => requestToken(server, fields()), status: 400, code: 'invalid_request' },
          {
            name: `${kind} without ${name} (form)`,
            send: () => postToken(server, formBody(fields()), form),
            status: 400,
            code: 'invalid_request',
          },
        ];
      }),
    ),
    { name: 'an empty object', send: () => requestToken(server, {}), status: 400, code: 'invalid_request' },

    // --- A field of the wrong type ----------------------------------------------------------------------------
    { name: 'grant_type a number', send: () => admin({ grant_type: 1 }), status: 400, code: 'invalid_request' },
    { name: 'grant_type an array', send: () => admin({ grant_type: ['client_credentials'] }), status: 400, code: 'invalid_request' },
    { name: 'client_id a number', send: () => admin({ client_id: 123 }), status: 400, code: 'invalid_request' },
    { name: 'client_id an object', send: () => admin({ client_id: { id: server.app.clientId } }), status: 400, code: 'invalid_request' },
    { name: 'client_id an array', send: () => admin({ client_id: [server.app.clientId] }), status: 400, code: 'invalid_request' },
    { name: 'client_secret a boolean', send: () => admin({ client_secret: true }), status: 400, code: 'invalid_request' },
    {
      name: 'client_secret an array',
      send: () => admin({ client_secret: [server.app.clientSecret] }),
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'client_secret an object',
      send: () => admin({ client_secret: { value: server.app.clientSecret } }),
      status: 400,
      code: 'invalid_request',
    },
    { name: 'expiresAt a boolean', send: () => admin({ expiresAt: true }), status: 400, code: 'invalid_request' },
    { name: 'expiresAt an object', send: () => admin({ expiresAt: {} }), status: 400, code: 'invalid_request' },
    { name: 'expiresAt an array', send: () => admin({ expiresAt: [Date.now() + 60_000] }), status: 400, code: 'invalid_request' },

    // --- grant_type other than client_credentials ----------------------------------------------------------------
    ...['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS', 'client_credentials '].map((grantType) => ({
      name: `grant_type ${JSON.stringify(grantType)}`,
      send: () => admin({ grant_type: grantType }),
      status: 400,
      code: 'unsupported_grant_type',
    })),
    {
      name: 'grant_type "password" in an anonymous form',
      send: () => postToken(server, formBody(anonymousFields(server, { grant_type: 'password' })), form),
      status: 400,
      code: 'unsupported_grant_type',
    },

    // --- expiresAt not an integer, negative, a string in JSON, or not after now ----------------------------------
    ...(
      [
        ['1.5', 1.5],
        ['now + 60 s + 0.5 ms', now + 60_000.5],
        ['-1', -1],
        ['-(now + 60 s)', -(now + 60_000)],
        ['now + 60 s as a string', String(now + 60_000)],
        ['"123"', '123'],
        ['1 s ago', now - 1000],
        ['1e300', 1e300],
      ] as const
    ).flatMap(([label, expiresAt]): Refusal[] => [
      { name: `admin expiresAt ${label}`, send: () => admin({ expiresAt }), status: 400, code: 'invalid_request' },
      { name: `anonymous expiresAt ${label}`, send: () => anonymous({ expiresAt }), status: 400, code: 'invalid_request' },
    ]),
    ...(
      [
        ['1.5', '1.5'],
        ['-1', '-1'],
        ['tomorrow', 'tomorrow'],
        ['now + 60 s with "ms"', `${now + 60_000}ms`],
        ['1 s ago', `${now - 1000}`],
      ] as const
    ).map(([label, expiresAt]) => ({
      name: `expiresAt ${label} in a form`,
      send: () => adminForm({ expiresAt }),
      status: 400,
      code: 'invalid_request',
    })),

    // --- Malformed Basic header, or Bearer instead ---------------------------------------------------------------
    ...(
      [
        ['"Basic"', () => 'Basic'],
        ['Basic of no base64', () => 'Basic !!!not-base64!!!'],
        ['Basic without a colon', () => `Basic ${Buffer.from(server.app.appId).toString('base64')}`],
        ['an admin token as Bearer', () => bearer(accessToken)],
        ['Digest', () => `Digest username="${server.app.appId}"`],
        ['the bare AppID', () => server.app.appId],
      ] as const
    ).map(([name, authorization]) => ({
      name: `Authorization: ${name}`,
      send: () => postToken(server, JSON.stringify(adminFields(server)), { ...json, authorization: authorization() }),
      status: 401,
      code: 'invalid_client',
      secrets: () => [accessToken],
      challenge: 'basic' as const,
    })),

    // --- No credentials at all (no Authorization, none in the body) ----------------------------------------------
    ...(
      [
        ['application/json', '{"grant_type":"client_credentials"}'],
        ['application/x-www-form-urlencoded', 'grant_type=client_credentials'],
      ] as const
    ).map(([type, body]) => ({
      name: `no credentials at all, ${type}`,
      send: () => request(tokenUrl(server), { method: 'POST', headers: { 'content-type': type }, body }),
      status: 401,
      code: 'invalid_client',
      challenge: 'basic' as const,
      message: /client_id and client_secret in the body/,
    })),

    // --- A Basic user part that is not the AppID, nothing in the body: an admin attempt ---------------------------
    ...(
      [
        ['another app’s AppID', () => other.appId],
        ['"someone-else"', () => 'someone-else'],
        ['empty', () => ''],
        ['the AppID in capitals', () => server.app.appId.toUpperCase()],
        ['the ClientID', () => server.app.clientId],
      ] as const
    ).map(([name, user]) => ({
      name: `Basic user part ${name}, nothing in the body`,
      send: () => postToken(server, 'grant_type=client_credentials', { ...form, authorization: basic(user(), server.app.appKey) }),
      status: 401,
      code: 'invalid_client',
      challenge: 'basic' as const,
    })),

    // --- client_id neither the ClientID nor the AppID, or a wrong ClientSecret ------------------------------------
    ...(
      [
        ['client_id unknown', () => ({ client_id: 'unknown-client-id' })],
        ['client_id another app’s ClientID', () => ({ client_id: other.clientId })],
        ['client_id another app’s AppID with its AppKey', () => ({ client_id: other.appId, client_secret: other.appKey })],
        ['client_id the admin id', () => ({ client_id: server.app.adminId })],
        ['client_id the AppKey', () => ({ client_id: server.app.appKey })],
        ['client_id the ClientID in capitals', () => ({ client_id: server.app.clientId.toUpperCase() })],
        ['client_secret one character off', () => ({ client_secret: wrongSecret() })],
        ['client_secret another app’s', () => ({ client_secret: other.clientSecret })],
        ['client_secret the AppKey', () => ({ client_secret: server.app.appKey })],
        ['client_secret in capitals', () => ({ client_secret: server.app.clientSecret.toUpperCase() })],
        ['client_secret with a trailing space', () => ({ client_secret: `${server.app.clientSecret} ` })],
      ] as const
    ).map(([name, extra]) => ({
      name,
      send: () => admin(extra()),
      status: 401,
      code: 'invalid_client',
      secrets: () => [wrongSecret(), other.clientSecret],
      challenge: 'basic' as const,
    })),

    // --- Unknown appId ----------------------------------------------------------------------------------------
    ...['0123456789abcdef', 'no-such-app', 'x'.repeat(65), 'not%20an%20id'].map((appId) => ({
      name: `unknown appId ${appId}`,
      send: () =>
        request(`${server.baseUrl}/api/apps/${appId}/oauth2/token`, {
          method: 'POST',
          headers: { authorization: basic(decodeURIComponent(appId)), ...json },
          body: JSON.stringify(adminFields(server)),
        }),
      status: 404,
      code: 'APP_NOT_FOUND',
    })),

    // --- Unsupported Content-Type ---------------------------------------------------------------------------------
    ...[
      'text/plain',
      'text/plain; charset=utf-8',
      'application/xml',
      'multipart/form-data; boundary=----x',
      'application/octet-stream',
    ].map((contentType) => ({
      name: `Content-Type ${contentType}`,
      send: () => postToken(server, JSON.stringify(adminFields(server)), { 'content-type': contentType }),
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
    })),
    {
      name: 'a multipart body made by FormData',
      send: () => {
        const multipart = new FormData();
        multipart.set('grant_type', 'client_credentials');
        multipart.set('client_id', server.app.clientId);
        multipart.set('client_secret', server.app.clientSecret);
        return request(tokenUrl(server), { method: 'POST', headers: { authorization: basic(server.app.appId) }, body: multipart });
      },
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
    },

    // --- Any other method on the token path ------------------------------------------------------------------------
    ...tokenPaths.flatMap(([where, url]): Refusal[] => [
      ...['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].map((method) => ({
        name: `${method} on ${where}`,
        send: () => request(url(), { method, headers: { authorization: basic(server.app.appId), 'x-kii-appid': server.app.appId } }),
        status: 405,
        code: 'METHOD_NOT_ALLOWED',
        allow: 'POST',
      })),
      {
        name: `PUT with the credentials on ${where}`,
        send: () =>
          request(url(), {
            method: 'PUT',
            headers: { authorization: basic(server.app.appId), ...json, 'x-kii-appid': server.app.appId },
            body: JSON.stringify(adminFields(server)),
          }),
        status: 405,
        code: 'METHOD_NOT_ALLOWED',
        allow: 'POST',
      },
    ]),
  ];

  for (const refusal of refusals) {
    it(`${refusal.name}: ${refusal.status} ${refusal.code}`, async () => {
      const response = await refusal.send();
      assertRefused(response, refusal.status, refusal.code, [server.app.clientSecret, ...(refusal.secrets?.() ?? [])]);
      if (refusal.challenge === 'basic') assertBasicChallenge(response);
      if (refusal.allow !== undefined) assert.equal(response.headers.get('allow'), refusal.allow);
      if (refusal.message !== undefined) assert.match(response.body.message, refusal.message);
    });
  }

  for (const [where, url] of tokenPaths) {
    it(`HEAD on ${where}: 405 with Allow: POST`, async () => {
      const head = await fetch(url(), { method: 'HEAD' });
      assert.equal(head.status, 405);
      assert.equal(head.headers.get('allow'), 'POST');
    });
  }

  it('a Basic user part that is not the AppID, other credentials in the body: 400 invalid_request (RFC 6749 §2.3), for a known ClientID as for an unknown one', async () => {
    const answers = new Set<string>();
    for (const user of [other.appId, 'someone-else', '', server.app.appId.toUpperCase(), server.app.clientId]) {
      for (const fields of [adminFields(server, { client_secret: 'not-the-secret' }), anonymousFields(server)]) {
        const response = await requestToken(server, fields, { authorization: basic(user) });
        assertRefused(response, 400, 'invalid_request', [server.app.clientSecret]);
        assert.equal(response.headers.get('www-authenticate'), null);
        answers.add(response.text);
      }
    }
    // One answer whatever the user part: a ClientID cannot be told from another value this way.
    assert.equal(answers.size, 1, [...answers].join('\n'));
  });

  it('a wrong ClientSecret and an unknown ClientID are indistinguishable', async () => {
    const wrongSecret = await requestToken(server, adminFields(server, { client_secret: 'a'.repeat(64) }));
    const unknownClient = await requestToken(server, adminFields(server, { client_id: 'b'.repeat(32), client_secret: 'a'.repeat(64) }));
    assertRefused(wrongSecret, 401, 'invalid_client');
    assertRefused(unknownClient, 401, 'invalid_client');
    assert.equal(wrongSecret.text, unknownClient.text);
    const headersOf = (response: JsonResponse) => [...response.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id');
    assert.deepEqual(headersOf(wrongSecret), headersOf(unknownClient));
  });

  it(`a body over ${MAX_BODY_BYTES} bytes: 413 REQUEST_TOO_LARGE; exactly at the limit is accepted`, async () => {
    assert.ok(MAX_BODY_BYTES >= 2048, 'a few KiB at least');
    const padded = (bytes: number) => {
      const base = JSON.stringify(adminFields(server, { padding: '' }));
      return JSON.stringify(adminFields(server, { padding: 'p'.repeat(bytes - Buffer.byteLength(base)) }));
    };
    assert.equal(Buffer.byteLength(padded(MAX_BODY_BYTES)), MAX_BODY_BYTES);
    assertTokenResponse(await postToken(server, padded(MAX_BODY_BYTES), json), server.app.adminId);
    assertRefused(await postToken(server, padded(MAX_BODY_BYTES + 1), json), 413, 'REQUEST_TOO_LARGE', [server.app.clientSecret]);
    assertRefused(await postToken(server, padded(64 * 1024), json), 413, 'REQUEST_TOO_LARGE', [server.app.clientSecret]);
    const bigForm = `${formBody(adminFields(server))}&padding=${'p'.repeat(MAX_BODY_BYTES)}`;
    const formResponse = await postToken(server, bigForm, { 'content-type': 'application/x-www-form-urlencoded' });
    assertRefused(formResponse, 413, 'REQUEST_TOO_LARGE', [server.app.clientSecret]);
  });
});
