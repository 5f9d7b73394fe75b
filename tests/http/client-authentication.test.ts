import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RateLimitSettings } from '../../src/limits/rate-limits.js';
import { assertError, assertInvalidToken, assertUnauthorized } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminFields,
  adminTokenOf,
  anonymousFields,
  anonymousTokenOf,
  basic,
  bearer,
  formBody,
  request,
  tokenUrl,
  whoami,
  type AppEndpoint,
  type JsonResponse,
} from '../helpers/http.js';
import { serverForSuite, startServer } from '../helpers/server.js';

/**
 * Client authentication as standard OAuth2 clients send it (RFC 6749 §2.3.1), on the token endpoint
 * and on revocation (RFC 7009) and introspection (RFC 7662): `client_secret_basic` and
 * `client_secret_post`, for the admin client (ClientID, ClientSecret) and the anonymous one (AppID,
 * AppKey); credentials that disagree; failed admin attempts counted under the same limits wherever
 * they are made.
 */

const FORM = 'application/x-www-form-urlencoded';
const BASIC_CHALLENGE = 'Basic realm="tessera"';

const server = serverForSuite();

function post(url: string, headers: Record<string, string>, body: string): Promise<JsonResponse> {
  return request(url, { method: 'POST', headers, body });
}

function assertToken(response: JsonResponse, id: string): string {
  assert.equal(response.status, 200, response.text);
  assert.equal(response.body.id, id);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  return response.body.access_token as string;
}

async function assertPrincipal(token: string, principal: 'admin' | 'anonymous'): Promise<void> {
  const me = await whoami(server.appUrl, bearer(token));
  assert.equal(me.status, 200, me.text);
  assert.equal(me.body.principal, principal);
}

function assertInvalidClient(response: JsonResponse): void {
  assertError(response, 401, 'invalid_client');
  assert.equal(response.headers.get('www-authenticate'), BASIC_CHALLENGE);
}

describe('the token endpoint: client_secret_post, with no Authorization header', () => {
  it('issues both kinds of token from the body alone, as a form, as JSON and under the SDK media type', async () => {
    for (const type of [FORM, 'application/json', 'application/vnd.kii.OauthTokenRequest+json']) {
      const encode = (fields: Record<string, unknown>) => (type === FORM ? formBody(fields) : JSON.stringify(fields));
      await assertPrincipal(
        assertToken(await post(tokenUrl(server), { 'content-type': type }, encode(adminFields(server))), server.app.adminId),
        'admin',
      );
      await assertPrincipal(
        assertToken(await post(tokenUrl(server), { 'content-type': type }, encode(anonymousFields(server))), 'ANONYMOUS'),
        'anonymous',
      );
    }
  });

  it("a wrong ClientSecret: 401 invalid_client with WWW-Authenticate: Basic, the same answer as with the seed's header", async () => {
    const wrong = formBody(adminFields(server, { client_secret: 'not-the-secret' }));
    const without = await post(tokenUrl(server), { 'content-type': FORM }, wrong);
    const withSeedHeader = await post(tokenUrl(server), { 'content-type': FORM, authorization: basic(server.app.appId) }, wrong);
    assertInvalidClient(without);
    assert.equal(without.text, withSeedHeader.text);
  });

  it('a body with client_id but no client_secret: 400 invalid_request', async () => {
    const response = await post(
      tokenUrl(server),
      { 'content-type': FORM },
      formBody({ grant_type: 'client_credentials', client_id: server.app.clientId }),
    );
    assertError(response, 400, 'invalid_request');
    assert.match(response.body.message, /client_secret is required/);
  });
});

describe('the token endpoint: client_secret_basic of the anonymous client, Basic base64(AppID:AppKey)', () => {
  it('with nothing in the body but grant_type: an anonymous token (form or JSON)', async () => {
    const headers = { authorization: basic(server.app.appId, server.app.appKey) };
    for (const [type, body] of [
      [FORM, 'grant_type=client_credentials'],
      ['application/json', '{"grant_type":"client_credentials"}'],
    ] as const) {
      await assertPrincipal(
        assertToken(await post(tokenUrl(server), { ...headers, 'content-type': type }, body), 'ANONYMOUS'),
        'anonymous',
      );
    }
    const expiresAt = Date.now() + 3_600_000;
    const expiring = await post(
      tokenUrl(server),
      { ...headers, 'content-type': FORM },
      formBody({ grant_type: 'client_credentials', expiresAt: String(expiresAt) }),
    );
    assertToken(expiring, 'ANONYMOUS');
    assert.equal((await whoami(server.appUrl, bearer(expiring.body.access_token))).body.expiresAt, expiresAt);
  });

  it("Basic AppID:anything with credentials in the body is still the seed's request: the body decides", async () => {
    const headers = { authorization: basic(server.app.appId, 'anything'), 'content-type': 'application/json' };
    assertToken(await post(tokenUrl(server), headers, JSON.stringify(adminFields(server))), server.app.adminId);
    assertToken(await post(tokenUrl(server), headers, JSON.stringify(anonymousFields(server))), 'ANONYMOUS');
  });

  it('checks the AppKey when the app requires it: a wrong one is 401 invalid_client', async () => {
    const strict = await createConfiguredApp(server, { requireAppKey: true });
    const send = (key: string) =>
      post(tokenUrl(strict), { authorization: basic(strict.appId, key), 'content-type': FORM }, 'grant_type=client_credentials');
    assertToken(await send(strict.appKey), 'ANONYMOUS');
    assertInvalidClient(await send('not-the-app-key'));
  });

  it('an empty password and nothing in the body: 400 invalid_request naming the AppKey', async () => {
    const response = await post(
      tokenUrl(server),
      { authorization: basic(server.app.appId, ''), 'content-type': FORM },
      'grant_type=client_credentials',
    );
    assertError(response, 400, 'invalid_request');
    assert.match(response.body.message, /AppKey/);
  });
});

describe('the token endpoint: credentials in the header and in the body', () => {
  it('agreeing ones are fine (client_secret_basic with the body repeating them)', async () => {
    const response = await post(
      tokenUrl(server),
      { authorization: basic(server.app.clientId, server.app.clientSecret), 'content-type': FORM },
      formBody(adminFields(server)),
    );
    assertToken(response, server.app.adminId);
  });

  it('disagreeing ones: 400 invalid_request (RFC 6749 §2.3), not counted as a failed admin attempt', async () => {
    const limited = await startServer({ rateLimits: limits(2) });
    try {
      for (let i = 0; i < 4; i++) {
        const response = await post(
          tokenUrl(limited),
          { authorization: basic(limited.app.clientId, limited.app.clientSecret), 'content-type': FORM },
          formBody(anonymousFields(limited)),
        );
        assertError(response, 400, 'invalid_request');
        assert.match(response.body.message, /differ/);
        assert.equal(response.headers.get('www-authenticate'), null);
      }
      assertToken(await post(tokenUrl(limited), { 'content-type': FORM }, formBody(adminFields(limited))), limited.app.adminId);
    } finally {
      await limited.close();
    }
  });
});

describe('the token paths refuse user and thing logins (username and password): 400 unsupported_grant_type', () => {
  it('with grant_type=password, or without grant_type, on both paths, in every body type', async () => {
    const sdkHeaders = { 'x-kii-appid': server.app.appId, 'x-kii-appkey': server.app.appKey };
    const cases: [string, Record<string, string>, string][] = [
      [tokenUrl(server), { 'content-type': FORM }, 'grant_type=password&username=alice&password=secret1'],
      [tokenUrl(server), { 'content-type': 'application/json' }, '{"username":"alice","password":"secret1"}'],
      [
        tokenUrl(server),
        { ...sdkHeaders, 'content-type': 'application/vnd.kii.OauthTokenRequest+json' },
        '{"username":"VENDOR_THING_ID:t1","password":"secret1"}',
      ],
      [
        `${server.baseUrl}/api/oauth2/token`,
        { ...sdkHeaders, 'content-type': 'application/json' },
        '{"username":"alice","password":"secret1"}',
      ],
      [
        `${server.baseUrl}/api/oauth2/token`,
        { ...sdkHeaders, 'content-type': 'application/json' },
        '{"grant_type":"password","username":"alice","password":"secret1"}',
      ],
      [
        `${server.baseUrl}/api/oauth2/token`,
        { ...sdkHeaders, 'content-type': 'application/vnd.kii.OauthTokenRequest+json' },
        '{"username":"VENDOR_THING_ID:t1","password":"secret1"}',
      ],
    ];
    for (const [url, headers, body] of cases) {
      const response = await post(url, headers, body);
      assertError(response, 400, 'unsupported_grant_type');
      assert.match(response.body.message, /"client_credentials"/);
      assert.match(response.body.message, /username and password/);
      assert.doesNotMatch(response.body.message, /client_id is required/);
      assert.ok(!response.text.includes('secret1'));
    }
  });
});

/** Rate limits with `failures` failed admin attempts a minute per address (and per app). */
function limits(failures: number): RateLimitSettings {
  return {
    enabled: true,
    tokenRequestsPerAddressPerMinute: 1000,
    adminFailuresPerAddressPerMinute: failures,
    adminFailuresPerAppPerMinute: 1000,
  };
}

describe('revocation and introspection authenticate OAuth clients (RFC 7009 §2.1, RFC 7662 §2.1)', () => {
  const revokeUrl = () => `${server.appUrl}/oauth2/revoke`;
  const introspectUrl = () => `${server.appUrl}/oauth2/introspect`;
  const basicAdmin = () => ({ authorization: basic(server.app.clientId, server.app.clientSecret), 'content-type': FORM });
  const postAdmin = (token: string) => formBody({ token, client_id: server.app.clientId, client_secret: server.app.clientSecret });

  it('ClientID and ClientSecret, Basic or in the body, are the admin: introspect and revoke any token of the app', async () => {
    for (const send of [
      (url: string, token: string) => post(url, basicAdmin(), formBody({ token })),
      (url: string, token: string) => post(url, { 'content-type': FORM }, postAdmin(token)),
      (url: string, token: string) =>
        post(
          url,
          { 'content-type': 'application/json' },
          JSON.stringify({ token, client_id: server.app.clientId, client_secret: server.app.clientSecret }),
        ),
    ]) {
      for (const [token, principal] of [
        [await anonymousTokenOf(server), 'anonymous'],
        [await adminTokenOf(server), 'admin'],
      ] as const) {
        const introspection = await send(introspectUrl(), token);
        assert.equal(introspection.status, 200, introspection.text);
        assert.equal(introspection.body.active, true);
        assert.equal(introspection.body.principal, principal);
        const revoked = await send(revokeUrl(), token);
        assert.equal(revoked.status, 200, revoked.text);
        assert.equal(revoked.text, '{}');
        assert.match(revoked.headers.get('content-type') ?? '', /^application\/json/);
        assertInvalidToken(await whoami(server.appUrl, bearer(token)));
        assert.deepEqual((await send(introspectUrl(), token)).body, { active: false });
      }
    }
  });

  it('AppID and AppKey, Basic or in the body, are the anonymous client: it revokes anonymous tokens of the app, never an admin token, and may not introspect', async () => {
    const admin = await adminTokenOf(server);
    for (const send of [
      (url: string, token: string) =>
        post(url, { authorization: basic(server.app.appId, server.app.appKey), 'content-type': FORM }, formBody({ token })),
      (url: string, token: string) =>
        post(url, { 'content-type': FORM }, formBody({ token, client_id: server.app.appId, client_secret: server.app.appKey })),
    ]) {
      const anonymous = await anonymousTokenOf(server);
      const revoked = await send(revokeUrl(), anonymous);
      assert.equal(revoked.status, 200, revoked.text);
      assertInvalidToken(await whoami(server.appUrl, bearer(anonymous)));
      assertError(await send(revokeUrl(), admin), 403, 'ADMIN_REQUIRED');
      assertError(await send(introspectUrl(), admin), 403, 'ADMIN_REQUIRED');
    }
    assert.equal((await whoami(server.appUrl, bearer(admin))).status, 200);
  });

  it('a wrong ClientSecret, Basic or in the body: 401 invalid_client with WWW-Authenticate: Basic, recorded as a refusal', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Refusals');
    const token = await anonymousTokenOf(fresh);
    for (const url of [`${fresh.appUrl}/oauth2/revoke`, `${fresh.appUrl}/oauth2/introspect`]) {
      assertInvalidClient(
        await post(url, { authorization: basic(fresh.clientId, 'not-the-secret'), 'content-type': FORM }, formBody({ token })),
      );
      assertInvalidClient(
        await post(url, { 'content-type': FORM }, formBody({ token, client_id: fresh.clientId, client_secret: 'not-the-secret' })),
      );
      assertInvalidClient(await post(url, { 'content-type': FORM }, formBody({ token, client_id: 'no-such-client', client_secret: 'x' })));
    }
    const { events } = await server.tessera.events.list(fresh.appId, { type: 'token.refused', limit: 50 });
    assert.equal(events.length, 6);
    for (const event of events) assert.deepEqual([event.principal, event.details], ['admin', { reason: 'invalid_client' }]);
    assert.ok((await whoami(fresh.appUrl, bearer(token))).status === 200, 'nothing was revoked');
  });

  it('counts failures under the failed-admin limits, shared with the token endpoint: then 429 with Retry-After, the right secret included', async () => {
    const limited = await startServer({ rateLimits: limits(3) });
    try {
      const app = limited.app;
      const wrong = (path: string) =>
        post(
          `${limited.appUrl}${path}`,
          { authorization: basic(app.clientId, 'not-the-secret'), 'content-type': FORM },
          formBody({ token: 'x' }),
        );
      assertInvalidClient(await wrong('/oauth2/introspect'));
      assertInvalidClient(await wrong('/oauth2/revoke'));
      assertInvalidClient(
        await post(tokenUrl(limited), { 'content-type': FORM }, formBody(adminFields(limited, { client_secret: 'not-the-secret' }))),
      );
      for (const path of ['/oauth2/introspect', '/oauth2/revoke']) {
        const refused = await wrong(path);
        assertError(refused, 429, 'TOO_MANY_REQUESTS');
        assert.match(refused.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
        const right = await post(
          `${limited.appUrl}${path}`,
          { authorization: basic(app.clientId, app.clientSecret), 'content-type': FORM },
          formBody({ token: 'x' }),
        );
        assertError(right, 429, 'TOO_MANY_REQUESTS');
      }
      assertError(await post(tokenUrl(limited), { 'content-type': FORM }, formBody(adminFields(limited))), 429, 'TOO_MANY_REQUESTS');
      // Tokens and the anonymous client are not affected.
      const anonymous = await post(
        tokenUrl(limited),
        { authorization: basic(app.appId, app.appKey), 'content-type': FORM },
        'grant_type=client_credentials',
      );
      assertToken(anonymous, 'ANONYMOUS');
      const revoked = await post(
        `${limited.appUrl}/oauth2/revoke`,
        { authorization: basic(app.appId, app.appKey), 'content-type': FORM },
        formBody({ token: anonymous.body.access_token }),
      );
      assert.equal(revoked.status, 200, revoked.text);
    } finally {
      await limited.close();
    }
  });

  it('credentials in the header and in the body that disagree: 400 invalid_request; a bearer token with client credentials too: 400', async () => {
    const token = await anonymousTokenOf(server);
    const admin = await adminTokenOf(server);
    for (const url of [revokeUrl(), introspectUrl()]) {
      const disagreeing = await post(url, basicAdmin(), formBody({ token, client_id: server.app.appId, client_secret: server.app.appKey }));
      assertError(disagreeing, 400, 'invalid_request');
      const both = await post(url, { authorization: bearer(admin), 'content-type': FORM }, postAdmin(token));
      assertError(both, 400, 'invalid_request');
    }
    assert.equal((await whoami(server.appUrl, bearer(token))).status, 200);
  });

  it('the modes of every other path still work: a bearer token, Basic anonymous; none at all is 401 UNAUTHORIZED', async () => {
    const admin = await adminTokenOf(server);
    const token = await anonymousTokenOf(server);
    const introspection = await post(introspectUrl(), { authorization: bearer(admin), 'content-type': FORM }, formBody({ token }));
    assert.equal(introspection.body.active, true);
    assertError(
      await post(introspectUrl(), { authorization: basic(server.app.appId), 'content-type': FORM }, formBody({ token })),
      403,
      'ADMIN_REQUIRED',
    );
    assertUnauthorized(await post(revokeUrl(), { 'content-type': FORM }, formBody({ token })));
    assertUnauthorized(await post(introspectUrl(), { 'content-type': FORM }, formBody({ token })));
    assertUnauthorized(await post(revokeUrl(), { authorization: 'Basic !!!', 'content-type': FORM }, postAdmin(token)));
    assertInvalidToken(await post(revokeUrl(), { authorization: bearer('A'.repeat(43)), 'content-type': FORM }, formBody({ token })));
    assert.equal(
      (await post(revokeUrl(), { authorization: basic(server.app.appId), 'content-type': FORM }, formBody({ token }))).status,
      200,
    );
    assertInvalidToken(await whoami(server.appUrl, bearer(token)));
  });

  it('of another app, the credentials are no good here: 401 invalid_client', async () => {
    const other: AppEndpoint = await createConfiguredApp(server, {}, 'Other');
    const token = await anonymousTokenOf(server);
    assertInvalidClient(
      await post(introspectUrl(), { authorization: basic(other.clientId, other.clientSecret), 'content-type': FORM }, formBody({ token })),
    );
  });
});
