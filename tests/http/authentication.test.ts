import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { CreatedApp } from '../../src/apps/service.js';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { rawHttp } from '../helpers/raw-http.js';
import {
  adminFields,
  anonymousFields,
  basic,
  bearer,
  request,
  requestToken,
  startServer,
  type JsonResponse,
  type TestServer,
} from '../helpers/server.js';

// The contract's "Authentication on every other request", through a real listening server.

const INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"';

function appUrl(server: TestServer, appId: string): string {
  return `${server.baseUrl}/api/apps/${appId}`;
}

function get(url: string, authorization?: string, method = 'GET'): Promise<JsonResponse> {
  return request(url, { method, headers: authorization === undefined ? {} : { authorization } });
}

/** A token for any app through the token endpoint (HTTP), JSON body. */
async function tokenFor(server: TestServer, appId: string, clientId: string, clientSecret: string, extra: Record<string, unknown> = {}) {
  const response = await request(`${appUrl(server, appId)}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(appId), 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, ...extra }),
  });
  assert.equal(response.status, 200, response.text);
  return response.body.access_token as string;
}

const adminTokenOf = (server: TestServer, app: CreatedApp, extra: Record<string, unknown> = {}) =>
  tokenFor(server, app.appId, app.clientId, app.clientSecret, extra);
const anonymousTokenOf = (server: TestServer, app: CreatedApp, extra: Record<string, unknown> = {}) =>
  tokenFor(server, app.appId, app.appId, app.appKey, extra);

function assertInvalidToken(response: JsonResponse, token?: string): void {
  assertError(response, 401, 'INVALID_TOKEN');
  assert.equal(response.headers.get('www-authenticate'), INVALID_TOKEN_CHALLENGE);
  if (token !== undefined && token !== '') assert.ok(!response.text.includes(token), 'the error echoes the token');
}

function assertUnauthorized(response: JsonResponse): void {
  assertError(response, 401, 'UNAUTHORIZED');
  const challenge = response.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /\bBasic\b/, `WWW-Authenticate: ${challenge}`);
  assert.match(challenge, /\bBearer\b/, `WWW-Authenticate: ${challenge}`);
}

describe('authentication on every other request', () => {
  let server: TestServer;
  let adminToken: string;
  let anonymousToken: string;
  let other: CreatedApp;
  before(async () => {
    server = await startServer();
    adminToken = await adminTokenOf(server, server.app);
    anonymousToken = await anonymousTokenOf(server, server.app);
    other = await server.tessera.apps.create('Another app');
  });
  after(async () => server.close());

  describe('whoami in the three modes', () => {
    it('Basic anonymous', async () => {
      const response = await get(`${server.appUrl}/whoami`, basic(server.app.appId, 'whatever-value'));
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'basic', expiresAt: null });
      assert.deepEqual(Object.keys(response.body as object).sort(), ['appId', 'auth', 'expiresAt', 'id', 'principal']);
      // The password part is arbitrary, even empty.
      const empty = await get(`${server.appUrl}/whoami`, basic(server.app.appId, ''));
      assert.equal(empty.status, 200, empty.text);
      assert.equal(empty.body.auth, 'basic');
    });

    it('anonymous Bearer', async () => {
      const response = await get(`${server.appUrl}/whoami`, bearer(anonymousToken));
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null });
    });

    it('admin Bearer', async () => {
      const response = await get(`${server.appUrl}/whoami`, bearer(adminToken));
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt: null });
    });

    it('expiresAt is the requested expiresAt', async () => {
      const expiresAt = Date.now() + 3_600_000;
      const admin = await get(`${server.appUrl}/whoami`, bearer(await adminTokenOf(server, server.app, { expiresAt })));
      assert.deepEqual(admin.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt });
      const anonymous = await get(`${server.appUrl}/whoami`, bearer(await anonymousTokenOf(server, server.app, { expiresAt })));
      assert.deepEqual(anonymous.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt });
    });

    it('the scheme is case-insensitive (RFC 7235)', async () => {
      const admin = await get(`${server.appUrl}/whoami`, `bearer ${adminToken}`);
      assert.equal(admin.body.principal, 'admin');
      const anonymous = await get(`${server.appUrl}/whoami`, basic(server.app.appId).replace('Basic', 'BASIC'));
      assert.equal(anonymous.body.auth, 'basic');
    });
  });

  describe('401 INVALID_TOKEN with WWW-Authenticate: Bearer error="invalid_token"', () => {
    it('a token of another app', async () => {
      const otherAdmin = await adminTokenOf(server, other);
      const otherAnonymous = await anonymousTokenOf(server, other);
      // Both work in their own app...
      assert.equal((await get(`${appUrl(server, other.appId)}/whoami`, bearer(otherAdmin))).body.principal, 'admin');
      assert.equal((await get(`${appUrl(server, other.appId)}/whoami`, bearer(otherAnonymous))).body.principal, 'anonymous');
      // ...and in no other.
      for (const token of [otherAdmin, otherAnonymous]) {
        assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(token)), token);
        assertInvalidToken(await get(server.appUrl, bearer(token)), token);
        assertInvalidToken(await get(`${server.appUrl}/users/me`, bearer(token)), token);
      }
      // And the other way round.
      assertInvalidToken(await get(`${appUrl(server, other.appId)}/whoami`, bearer(adminToken)), adminToken);
    });

    it('a forged verifier, whether or not the real token was checked before', async () => {
      const real = (await requestToken(server, anonymousFields(server))).body.access_token as string;
      const bytes = Buffer.from(real, 'base64url');
      bytes[20] = bytes[20]! ^ 0x80;
      const forged = bytes.toString('base64url');
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(forged)), forged); // looked up in the store
      assert.equal((await get(`${server.appUrl}/whoami`, bearer(real))).status, 200);
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(forged)), forged); // compared with the cached one
      assert.equal((await get(`${server.appUrl}/whoami`, bearer(real))).status, 200);
    });

    it('an unknown well-formed token', async () => {
      const unknown = randomBytes(32).toString('base64url');
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(unknown)), unknown);
      // A real token with one character changed.
      const last = adminToken.at(-1) === 'A' ? 'B' : 'A';
      const altered = `${adminToken.slice(0, -1)}${last}`;
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(altered)), altered);
      // A real token with its verifier changed (its selector still finds the stored token), or its selector.
      for (const position of [30, 5]) {
        const bytes = Buffer.from(adminToken, 'base64url');
        bytes[position] = bytes[position]! ^ 0x01;
        const forged = bytes.toString('base64url');
        assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(forged)), forged);
      }
      // A second spelling of the same bytes (a padding bit of the last character set) is refused.
      const lastValue = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.indexOf(adminToken.at(-1)!);
      const respelled = `${adminToken.slice(0, -1)}${'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[lastValue | 1]}`;
      assert.deepEqual(Buffer.from(respelled, 'base64url'), Buffer.from(adminToken, 'base64url'));
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(respelled)), respelled);
      // A real token with a character more or less.
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(`${adminToken}A`)));
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(adminToken.slice(0, -1))));
    });

    it('a malformed token', async () => {
      for (const token of ['not-a-token', '!!!!', 'a.b.c', '%00', server.app.clientSecret, server.app.appKey, 'x'.repeat(600)]) {
        const response = await get(`${server.appUrl}/whoami`, bearer(token));
        assertInvalidToken(response, token);
      }
    });

    it('an empty Bearer', async () => {
      // fetch and Node's HTTP server both strip trailing whitespace: "Bearer " arrives as "Bearer".
      for (const authorization of ['Bearer ', 'Bearer']) {
        assertInvalidToken(await get(`${server.appUrl}/whoami`, authorization));
      }
    });
  });

  describe('401 UNAUTHORIZED, WWW-Authenticate naming Basic and Bearer', () => {
    const paths = ['/whoami', '', '/users/me', '/anything/else'];

    it('no Authorization header', async () => {
      for (const path of paths) assertUnauthorized(await get(`${server.appUrl}${path}`));
    });

    it('another scheme', async () => {
      for (const authorization of [
        `Digest username="${server.app.appId}", realm="tessera"`,
        `Token ${adminToken}`,
        `Negotiate ${Buffer.from(server.app.appId).toString('base64')}`,
        adminToken,
      ]) {
        for (const path of paths) {
          const response = await get(`${server.appUrl}${path}`, authorization);
          assertUnauthorized(response);
          assert.ok(!response.text.includes(adminToken));
        }
      }
    });

    it('Basic naming another AppID', async () => {
      for (const user of [other.appId, 'someone', '', server.app.appId.toUpperCase(), server.app.clientId]) {
        for (const path of paths) assertUnauthorized(await get(`${server.appUrl}${path}`, basic(user)));
      }
    });

    it('malformed Basic', async () => {
      for (const authorization of [
        'Basic',
        'Basic !!!not-base64!!!',
        `Basic ${Buffer.from(server.app.appId).toString('base64')}`, // no colon
        `Basic ${Buffer.from(`${server.app.appId}:x`).toString('base64')} extra`,
      ]) {
        for (const path of paths) assertUnauthorized(await get(`${server.appUrl}${path}`, authorization));
      }
    });
  });

  describe('404 APP_NOT_FOUND', () => {
    it('for an unknown app on whoami', async () => {
      for (const appId of ['0123456789abcdef', 'no-such-app', 'x'.repeat(65)]) {
        assertError(await get(`${appUrl(server, appId)}/whoami`, basic(appId)), 404, 'APP_NOT_FOUND');
        assertError(await get(`${appUrl(server, appId)}/whoami`, bearer(adminToken)), 404, 'APP_NOT_FOUND');
      }
    });
  });

  describe('GET /api/apps/{appId}, an admin feature', () => {
    it('answers an admin token with the public description, never a secret or a token', async () => {
      const response = await get(server.appUrl, bearer(adminToken));
      assert.equal(response.status, 200, response.text);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      const body = response.body as Record<string, unknown>;
      assert.equal(body.name, 'Test app');
      assert.equal(body.appId, server.app.appId);
      assert.equal(body.clientId, server.app.clientId);
      const createdAt = typeof body.createdAt === 'string' ? Date.parse(body.createdAt) : body.createdAt;
      assert.ok(typeof createdAt === 'number' && Number.isFinite(createdAt), `createdAt ${String(body.createdAt)}`);
      assert.ok(Math.abs(createdAt - Date.parse(server.app.createdAt)) < 1000, `createdAt ${String(body.createdAt)}`);
      assert.equal(typeof body.configuration, 'object');
      assert.notEqual(body.configuration, null);
      for (const key of Object.keys(body)) assert.doesNotMatch(key, /secret|hash|token/i);
      for (const forbidden of [server.app.clientSecret, adminToken, anonymousToken]) {
        assert.ok(!response.text.includes(forbidden), 'the description leaks a secret or a token');
      }
    });

    it('refuses Basic and an anonymous token: 403 ADMIN_REQUIRED', async () => {
      assertError(await get(server.appUrl, basic(server.app.appId)), 403, 'ADMIN_REQUIRED');
      assertError(await get(server.appUrl, bearer(anonymousToken)), 403, 'ADMIN_REQUIRED');
    });

    it('refuses no authentication: 401 UNAUTHORIZED', async () => {
      assertUnauthorized(await get(server.appUrl));
    });

    it("refuses another app's admin token: 401 INVALID_TOKEN", async () => {
      const otherAdmin = await adminTokenOf(server, other);
      assertInvalidToken(await get(server.appUrl, bearer(otherAdmin)), otherAdmin);
    });
  });

  describe('the /me rule', () => {
    const mePaths = ['/users/me', '/me/x', '/me', '/users/%6De', '/users/%6d%65', '/%6D%65/x', '/users/me/', '/users/me?x=1', '/a/b/me/c', '/users/ME', '/Me/x', '/users/%4De'];

    it('an admin token on a path with a "me" segment, in any case: 400 ME_NOT_ALLOWED_FOR_ADMIN', async () => {
      for (const path of mePaths) {
        for (const method of ['GET', 'DELETE']) {
          assertError(await get(`${server.appUrl}${path}`, bearer(adminToken), method), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
        }
      }
    });

    it('the same paths with an anonymous token or Basic: 404 NOT_FOUND', async () => {
      for (const path of mePaths) {
        assertError(await get(`${server.appUrl}${path}`, bearer(anonymousToken)), 404, 'NOT_FOUND');
        assertError(await get(`${server.appUrl}${path}`, basic(server.app.appId)), 404, 'NOT_FOUND');
      }
    });

    it('an admin token on a path without a segment that is exactly "me": 404 NOT_FOUND', async () => {
      for (const path of ['/users/meme', '/users/MEE', '/users/mee', '/users/xme', '/users/x?me=1', '/users/x?q=/me/']) {
        assertError(await get(`${server.appUrl}${path}`, bearer(adminToken)), 404, 'NOT_FOUND');
      }
    });
  });

  describe('an Authorization header sent twice: 400 invalid_request', () => {
    // Node keeps the first of two Authorization headers and drops the other; a proxy may keep the
    // last. Whichever is meant, the request is refused rather than read one way here.
    async function twice(method: string, path: string, first: string, second: string, extra = ''): Promise<JsonResponse> {
      const response = await rawHttp(
        server.baseUrl,
        `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${first}\r\nauthorization: ${second}\r\n${extra}Connection: close\r\n\r\n`,
      );
      assert.ok(response !== null, 'the server closed the connection without answering');
      return response;
    }

    it('on whoami and on an admin feature, whatever the two say', async () => {
      const appPath = `/api/apps/${server.app.appId}`;
      for (const [first, second] of [
        [bearer(adminToken), basic(server.app.appId)],
        [basic(server.app.appId), bearer(adminToken)],
        [bearer(adminToken), bearer(adminToken)],
      ] as const) {
        assertError(await twice('GET', `${appPath}/whoami`, first, second), 400, 'invalid_request');
        assertError(await twice('GET', appPath, first, second), 400, 'invalid_request');
      }
    });

    it('on the token endpoints', async () => {
      const body = JSON.stringify({ grant_type: 'client_credentials', client_id: server.app.appId, client_secret: server.app.appKey });
      const extra = `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
      const withBody = async (path: string, more = '') => {
        const response = await rawHttp(
          server.baseUrl,
          `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(server.app.appId)}\r\nAuthorization: ${basic(server.app.appId)}\r\n${more}${extra}Connection: close\r\n\r\n${body}`,
        );
        assert.ok(response !== null);
        return response;
      };
      assertError(await withBody(`/api/apps/${server.app.appId}/oauth2/token`), 400, 'invalid_request');
      assertError(await withBody('/api/oauth2/token', `X-Kii-AppID: ${server.app.appId}\r\n`), 400, 'invalid_request');
    });

    it('and X-Kii-AppID sent twice on the SDK token path', async () => {
      const body = JSON.stringify({ client_id: server.app.appId, client_secret: server.app.appKey });
      const response = await rawHttp(
        server.baseUrl,
        `POST /api/oauth2/token HTTP/1.1\r\nHost: x\r\nX-Kii-AppID: ${server.app.appId}\r\nX-Kii-AppID: ${other.appId}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      assert.ok(response !== null);
      assertError(response, 400, 'invalid_request');
    });
  });

  describe('changes made by the operator take effect at once', () => {
    it('a deleted app: its tokens, Basic and token requests stop working', async () => {
      const doomed = await server.tessera.apps.create('Doomed app');
      const admin = await adminTokenOf(server, doomed);
      const anonymous = await anonymousTokenOf(server, doomed);
      const url = appUrl(server, doomed.appId);
      assert.equal((await get(`${url}/whoami`, bearer(admin))).status, 200);
      assert.equal((await get(url, bearer(admin))).status, 200);
      assert.equal((await get(`${url}/whoami`, bearer(anonymous))).status, 200);

      await server.tessera.apps.delete(doomed.appId);

      for (const token of [admin, anonymous]) {
        for (const target of [`${url}/whoami`, url]) {
          const response = await get(target, bearer(token));
          if (response.status === 404) assertError(response, 404, 'APP_NOT_FOUND');
          else assertInvalidToken(response, token);
        }
      }
      assertError(await get(`${url}/whoami`, basic(doomed.appId)), 404, 'APP_NOT_FOUND');
      const tokenRequest = await request(`${url}/oauth2/token`, {
        method: 'POST',
        headers: { authorization: basic(doomed.appId), 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: doomed.clientId, client_secret: doomed.clientSecret }),
      });
      assertError(tokenRequest, 404, 'APP_NOT_FOUND');
      assert.ok(!tokenRequest.text.includes(doomed.clientSecret));
      // The other apps are untouched.
      assert.equal((await get(`${server.appUrl}/whoami`, bearer(adminToken))).status, 200);
    });

    it('a rotated secret: the old one is refused at once, the new one works, existing tokens keep working', async () => {
      const rotating = await server.tessera.apps.create('Rotating app');
      const before = await adminTokenOf(server, rotating);
      const url = appUrl(server, rotating.appId);

      const { clientSecret: newSecret } = await server.tessera.apps.rotateSecret(rotating.appId);
      assert.notEqual(newSecret, rotating.clientSecret);

      const old = await request(`${url}/oauth2/token`, {
        method: 'POST',
        headers: { authorization: basic(rotating.appId), 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: rotating.clientId, client_secret: rotating.clientSecret }),
      });
      assertError(old, 401, 'invalid_client');
      assert.match(old.headers.get('www-authenticate') ?? '', /^Basic/);
      assert.ok(!old.text.includes(rotating.clientSecret) && !old.text.includes(newSecret));

      const fresh = await tokenFor(server, rotating.appId, rotating.clientId, newSecret);
      assert.equal((await get(`${url}/whoami`, bearer(fresh))).body.principal, 'admin');
      // Revocation is a later feature: tokens issued before the rotation still work.
      const still = await get(`${url}/whoami`, bearer(before));
      assert.equal(still.status, 200, still.text);
      assert.equal(still.body.principal, 'admin');
      assert.equal((await get(url, bearer(before))).status, 200);
    });
  });

  describe('outside /api/apps/{appId}', () => {
    it('an unknown path: 404 NOT_FOUND in the contract shape', async () => {
      for (const path of ['/nope', '/', '/api', '/api/apps', '/api/oauth2', '/api/v1/apps/x/whoami']) {
        assertError(await get(`${server.baseUrl}${path}`), 404, 'NOT_FOUND');
        assertError(await get(`${server.baseUrl}${path}`, bearer(adminToken)), 404, 'NOT_FOUND');
      }
    });

    it('GET /openapi.json: the OpenAPI 3.1 description', async () => {
      const response = await get(`${server.baseUrl}/openapi.json`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(response.body.openapi, '3.1.0');
    });
  });
});

describe('authentication: expired tokens (fake clock)', () => {
  const clock = new FakeClock();
  let server: TestServer;
  before(async () => {
    server = await startServer({ clock });
  });
  after(async () => server.close());

  it('an expired token: 401 INVALID_TOKEN, on whoami and on the admin feature', async () => {
    const expiresAt = clock.now() + 10_000;
    const admin = await requestToken(server, adminFields(server, { expiresAt }));
    const anonymous = await requestToken(server, anonymousFields(server, { expiresAt }));
    const tokens = [admin.body.access_token as string, anonymous.body.access_token as string];
    for (const token of tokens) assert.equal((await get(`${server.appUrl}/whoami`, bearer(token))).status, 200);
    assert.equal((await get(server.appUrl, bearer(tokens[0] as string))).status, 200);

    clock.time = expiresAt;
    for (const token of tokens) {
      assertInvalidToken(await get(`${server.appUrl}/whoami`, bearer(token)), token);
      assertInvalidToken(await get(server.appUrl, bearer(token)), token);
      assertInvalidToken(await get(`${server.appUrl}/users/me`, bearer(token)), token);
    }
    // Basic anonymous does not expire.
    assert.equal((await get(`${server.appUrl}/whoami`, basic(server.app.appId))).status, 200);
  });
});
