import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import type { CreatedApp } from '../../src/apps/service.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertError, assertInvalidToken, assertUnauthorized } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import {
  adminFields,
  adminTokenOf,
  anonymousFields,
  anonymousTokenOf,
  appOn,
  appUrlOf,
  basic,
  bearer,
  requestAs,
  requestToken,
  whoami,
} from '../helpers/http.js';
import { rawWithHeaderLines, type HeaderLine } from '../helpers/raw-http.js';
import { serverForSuite } from '../helpers/server.js';

// The contract's "Authentication on every other request", through a real listening server.

describe('authentication on every other request', () => {
  const server = serverForSuite();
  let adminToken: string;
  let anonymousToken: string;
  let other: CreatedApp;
  before(async () => {
    adminToken = await adminTokenOf(server);
    anonymousToken = await anonymousTokenOf(server);
    other = await server.tessera.apps.create('Another app');
  });

  describe('whoami in the three modes', () => {
    it('Basic anonymous', async () => {
      const response = await whoami(server.appUrl, basic(server.app.appId, 'whatever-value'));
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'basic', expiresAt: null });
      assert.deepEqual(Object.keys(response.body as object).sort(), ['appId', 'auth', 'expiresAt', 'id', 'principal']);
      // The password part is arbitrary, even empty.
      const empty = await whoami(server.appUrl, basic(server.app.appId, ''));
      assert.equal(empty.status, 200, empty.text);
      assert.equal(empty.body.auth, 'basic');
    });

    it('anonymous Bearer', async () => {
      const response = await whoami(server.appUrl, bearer(anonymousToken));
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {
        appId: server.app.appId,
        principal: 'anonymous',
        id: 'ANONYMOUS',
        auth: 'bearer',
        expiresAt: null,
      });
    });

    it('admin Bearer', async () => {
      const response = await whoami(server.appUrl, bearer(adminToken));
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {
        appId: server.app.appId,
        principal: 'admin',
        id: server.app.adminId,
        auth: 'bearer',
        expiresAt: null,
      });
    });

    it('expiresAt is the requested expiresAt', async () => {
      const expiresAt = Date.now() + 3_600_000;
      const admin = await whoami(server.appUrl, bearer(await adminTokenOf(server, { expiresAt })));
      assert.deepEqual(admin.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt });
      const anonymous = await whoami(server.appUrl, bearer(await anonymousTokenOf(server, { expiresAt })));
      assert.deepEqual(anonymous.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt });
    });

    it('the scheme is case-insensitive (RFC 7235)', async () => {
      const admin = await whoami(server.appUrl, `bearer ${adminToken}`);
      assert.equal(admin.body.principal, 'admin');
      const anonymous = await whoami(server.appUrl, basic(server.app.appId).replace('Basic', 'BASIC'));
      assert.equal(anonymous.body.auth, 'basic');
    });
  });

  describe('401 INVALID_TOKEN with WWW-Authenticate: Bearer error="invalid_token"', () => {
    it('a token of another app', async () => {
      const otherAdmin = await adminTokenOf(appOn(server, other));
      const otherAnonymous = await anonymousTokenOf(appOn(server, other));
      // Both work in their own app...
      assert.equal((await whoami(appUrlOf(server.baseUrl, other.appId), bearer(otherAdmin))).body.principal, 'admin');
      assert.equal((await whoami(appUrlOf(server.baseUrl, other.appId), bearer(otherAnonymous))).body.principal, 'anonymous');
      // ...and in no other.
      for (const token of [otherAdmin, otherAnonymous]) {
        assertInvalidToken(await whoami(server.appUrl, bearer(token)), token);
        assertInvalidToken(await requestAs(server.appUrl, bearer(token)), token);
        assertInvalidToken(await requestAs(`${server.appUrl}/users/me`, bearer(token)), token);
      }
      // And the other way round.
      assertInvalidToken(await whoami(appUrlOf(server.baseUrl, other.appId), bearer(adminToken)), adminToken);
    });

    it('a forged verifier, whether or not the real token was checked before', async () => {
      const real = (await requestToken(server, anonymousFields(server))).body.access_token as string;
      const bytes = Buffer.from(real, 'base64url');
      bytes[20] = bytes[20]! ^ 0x80;
      const forged = bytes.toString('base64url');
      assertInvalidToken(await whoami(server.appUrl, bearer(forged)), forged); // looked up in the store
      assert.equal((await whoami(server.appUrl, bearer(real))).status, 200);
      assertInvalidToken(await whoami(server.appUrl, bearer(forged)), forged); // compared with the cached one
      assert.equal((await whoami(server.appUrl, bearer(real))).status, 200);
    });

    it('an unknown well-formed token', async () => {
      const unknown = randomBytes(32).toString('base64url');
      assertInvalidToken(await whoami(server.appUrl, bearer(unknown)), unknown);
      // A real token with one character changed.
      const last = adminToken.at(-1) === 'A' ? 'B' : 'A';
      const altered = `${adminToken.slice(0, -1)}${last}`;
      assertInvalidToken(await whoami(server.appUrl, bearer(altered)), altered);
      // A real token with its verifier changed (its selector still finds the stored token), or its selector.
      for (const position of [30, 5]) {
        const bytes = Buffer.from(adminToken, 'base64url');
        bytes[position] = bytes[position]! ^ 0x01;
        const forged = bytes.toString('base64url');
        assertInvalidToken(await whoami(server.appUrl, bearer(forged)), forged);
      }
      // A second spelling of the same bytes (a padding bit of the last character set) is refused.
      const lastValue = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.indexOf(adminToken.at(-1)!);
      const respelled = `${adminToken.slice(0, -1)}${'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[lastValue | 1]}`;
      assert.deepEqual(Buffer.from(respelled, 'base64url'), Buffer.from(adminToken, 'base64url'));
      assertInvalidToken(await whoami(server.appUrl, bearer(respelled)), respelled);
      // A real token with a character more or less.
      assertInvalidToken(await whoami(server.appUrl, bearer(`${adminToken}A`)));
      assertInvalidToken(await whoami(server.appUrl, bearer(adminToken.slice(0, -1))));
    });

    it('a malformed token', async () => {
      for (const token of ['not-a-token', '!!!!', 'a.b.c', '%00', server.app.clientSecret, server.app.appKey, 'x'.repeat(600)]) {
        const response = await whoami(server.appUrl, bearer(token));
        assertInvalidToken(response, token);
      }
    });

    it('an empty Bearer', async () => {
      // fetch and Node's HTTP server both strip trailing whitespace: "Bearer " arrives as "Bearer".
      for (const authorization of ['Bearer ', 'Bearer']) {
        assertInvalidToken(await whoami(server.appUrl, authorization));
      }
    });
  });

  describe('401 UNAUTHORIZED, WWW-Authenticate naming Basic and Bearer', () => {
    const paths = ['/whoami', '', '/users/me', '/anything/else'];

    it('no Authorization header', async () => {
      for (const path of paths) assertUnauthorized(await requestAs(`${server.appUrl}${path}`));
    });

    it('another scheme', async () => {
      for (const authorization of [
        `Digest username="${server.app.appId}", realm="tessera"`,
        `Token ${adminToken}`,
        `Negotiate ${Buffer.from(server.app.appId).toString('base64')}`,
        adminToken,
      ]) {
        for (const path of paths) {
          const response = await requestAs(`${server.appUrl}${path}`, authorization);
          assertUnauthorized(response);
          assert.ok(!response.text.includes(adminToken));
        }
      }
    });

    it('Basic naming another AppID', async () => {
      for (const user of [other.appId, 'someone', '', server.app.appId.toUpperCase(), server.app.clientId]) {
        for (const path of paths) assertUnauthorized(await requestAs(`${server.appUrl}${path}`, basic(user)));
      }
    });

    it('malformed Basic', async () => {
      for (const authorization of [
        'Basic',
        'Basic !!!not-base64!!!',
        `Basic ${Buffer.from(server.app.appId).toString('base64')}`, // no colon
        `Basic ${Buffer.from(`${server.app.appId}:x`).toString('base64')} extra`,
      ]) {
        for (const path of paths) assertUnauthorized(await requestAs(`${server.appUrl}${path}`, authorization));
      }
    });
  });

  describe('404 APP_NOT_FOUND', () => {
    it('for an unknown app on whoami', async () => {
      for (const appId of ['0123456789abcdef', 'no-such-app', 'x'.repeat(65)]) {
        assertError(await whoami(appUrlOf(server.baseUrl, appId), basic(appId)), 404, 'APP_NOT_FOUND');
        assertError(await whoami(appUrlOf(server.baseUrl, appId), bearer(adminToken)), 404, 'APP_NOT_FOUND');
      }
    });
  });

  describe('GET /api/apps/{appId}, an admin feature', () => {
    it('answers an admin token with the public description, never a secret or a token', async () => {
      const response = await requestAs(server.appUrl, bearer(adminToken));
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
      // The one field that names the secret is an instant (until when a rotated secret works).
      assert.equal(body.previousSecretValidUntil, null);
      for (const key of Object.keys(body).filter((key) => key !== 'previousSecretValidUntil'))
        assert.doesNotMatch(key, /secret|hash|token/i);
      for (const forbidden of [server.app.clientSecret, adminToken, anonymousToken]) {
        assert.ok(!response.text.includes(forbidden), 'the description leaks a secret or a token');
      }
    });

    it('refuses Basic and an anonymous token: 403 ADMIN_REQUIRED', async () => {
      assertError(await requestAs(server.appUrl, basic(server.app.appId)), 403, 'ADMIN_REQUIRED');
      assertError(await requestAs(server.appUrl, bearer(anonymousToken)), 403, 'ADMIN_REQUIRED');
    });

    it('refuses no authentication: 401 UNAUTHORIZED', async () => {
      assertUnauthorized(await requestAs(server.appUrl));
    });

    it("refuses another app's admin token: 401 INVALID_TOKEN", async () => {
      const otherAdmin = await adminTokenOf(appOn(server, other));
      assertInvalidToken(await requestAs(server.appUrl, bearer(otherAdmin)), otherAdmin);
    });
  });

  describe('the /me rule', () => {
    const mePaths = [
      '/users/me',
      '/me/x',
      '/me',
      '/users/%6De',
      '/users/%6d%65',
      '/%6D%65/x',
      '/users/me/',
      '/users/me?x=1',
      '/a/b/me/c',
      '/users/ME',
      '/Me/x',
      '/users/%4De',
    ];

    it('an admin token on a path with a "me" segment, in any case: 400 ME_NOT_ALLOWED_FOR_ADMIN', async () => {
      for (const path of mePaths) {
        for (const method of ['GET', 'DELETE']) {
          assertError(await requestAs(`${server.appUrl}${path}`, bearer(adminToken), method), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
        }
      }
    });

    it('the same paths with an anonymous token or Basic: 404 NOT_FOUND', async () => {
      for (const path of mePaths) {
        assertError(await requestAs(`${server.appUrl}${path}`, bearer(anonymousToken)), 404, 'NOT_FOUND');
        assertError(await requestAs(`${server.appUrl}${path}`, basic(server.app.appId)), 404, 'NOT_FOUND');
      }
    });

    it('an admin token on a path without a segment that is exactly "me": 404 NOT_FOUND', async () => {
      for (const path of ['/users/meme', '/users/MEE', '/users/mee', '/users/xme', '/users/x?me=1', '/users/x?q=/me/']) {
        assertError(await requestAs(`${server.appUrl}${path}`, bearer(adminToken)), 404, 'NOT_FOUND');
      }
    });
  });

  describe('an Authorization header sent twice: 400 invalid_request', () => {
    // Node keeps the first of two Authorization headers and drops the other; a proxy may keep the
    // last. Whichever is meant, the request is refused rather than read one way here.
    const twice = (path: string, first: string, second: string) =>
      rawWithHeaderLines(server.baseUrl, {
        method: 'GET',
        path,
        lines: [
          ['Authorization', first],
          ['authorization', second],
        ],
      });

    it('on whoami and on an admin feature, whatever the two say', async () => {
      const appPath = `/api/apps/${server.app.appId}`;
      for (const [first, second] of [
        [bearer(adminToken), basic(server.app.appId)],
        [basic(server.app.appId), bearer(adminToken)],
        [bearer(adminToken), bearer(adminToken)],
      ] as const) {
        assertError(await twice(`${appPath}/whoami`, first, second), 400, 'invalid_request');
        assertError(await twice(appPath, first, second), 400, 'invalid_request');
      }
    });

    it('on the token endpoints', async () => {
      const body = JSON.stringify({ grant_type: 'client_credentials', client_id: server.app.appId, client_secret: server.app.appKey });
      const withBody = (path: string, more: HeaderLine[] = []) =>
        rawWithHeaderLines(server.baseUrl, {
          method: 'POST',
          path,
          lines: [
            ['Authorization', basic(server.app.appId)],
            ['Authorization', basic(server.app.appId)],
            ...more,
            ['Content-Type', 'application/json'],
          ],
          body,
        });
      assertError(await withBody(`/api/apps/${server.app.appId}/oauth2/token`), 400, 'invalid_request');
      assertError(await withBody('/api/oauth2/token', [['X-Kii-AppID', server.app.appId]]), 400, 'invalid_request');
    });

    it('and X-Kii-AppID sent twice on the SDK token path', async () => {
      const body = JSON.stringify({ client_id: server.app.appId, client_secret: server.app.appKey });
      const response = await rawWithHeaderLines(server.baseUrl, {
        method: 'POST',
        path: '/api/oauth2/token',
        lines: [
          ['X-Kii-AppID', server.app.appId],
          ['X-Kii-AppID', other.appId],
          ['Content-Type', 'application/json'],
        ],
        body,
      });
      assertError(response, 400, 'invalid_request');
    });
  });

  describe('changes made by the operator take effect at once', () => {
    it('a deleted app: its tokens, Basic and token requests stop working', async () => {
      const doomed = appOn(server, await server.tessera.apps.create('Doomed app'));
      const admin = await adminTokenOf(doomed);
      const anonymous = await anonymousTokenOf(doomed);
      const url = doomed.appUrl;
      assert.equal((await whoami(url, bearer(admin))).status, 200);
      assert.equal((await requestAs(url, bearer(admin))).status, 200);
      assert.equal((await whoami(url, bearer(anonymous))).status, 200);

      await server.tessera.apps.delete(doomed.appId, OPERATOR);

      for (const token of [admin, anonymous]) {
        for (const target of [`${url}/whoami`, url]) {
          const response = await requestAs(target, bearer(token));
          if (response.status === 404) assertError(response, 404, 'APP_NOT_FOUND');
          else assertInvalidToken(response, token);
        }
      }
      assertError(await whoami(url, basic(doomed.appId)), 404, 'APP_NOT_FOUND');
      const tokenRequest = await requestToken(doomed, adminFields(doomed));
      assertError(tokenRequest, 404, 'APP_NOT_FOUND');
      assert.ok(!tokenRequest.text.includes(doomed.clientSecret));
      // The other apps are untouched.
      assert.equal((await whoami(server.appUrl, bearer(adminToken))).status, 200);
    });

    it('a rotated secret: the old one is refused at once, the new one works, existing tokens keep working', async () => {
      const rotating = appOn(server, await server.tessera.apps.create('Rotating app'));
      const before = await adminTokenOf(rotating);
      const url = rotating.appUrl;

      const { clientSecret: newSecret } = await server.tessera.apps.rotateSecret(rotating.appId, {}, OPERATOR);
      assert.notEqual(newSecret, rotating.clientSecret);

      const old = await requestToken(rotating, adminFields(rotating));
      assertError(old, 401, 'invalid_client');
      assert.match(old.headers.get('www-authenticate') ?? '', /^Basic/);
      assert.ok(!old.text.includes(rotating.clientSecret) && !old.text.includes(newSecret));

      const fresh = await adminTokenOf({ ...rotating, clientSecret: newSecret });
      assert.equal((await whoami(url, bearer(fresh))).body.principal, 'admin');
      // Revocation is a later feature: tokens issued before the rotation still work.
      const still = await whoami(url, bearer(before));
      assert.equal(still.status, 200, still.text);
      assert.equal(still.body.principal, 'admin');
      assert.equal((await requestAs(url, bearer(before))).status, 200);
    });
  });

  describe('outside /api/apps/{appId}', () => {
    it('an unknown path: 404 NOT_FOUND in the contract shape', async () => {
      // `/` is the way to the portal (tests/http/portal-*.test.ts).
      for (const path of ['/nope', '/api', '/api/apps', '/api/oauth2', '/api/v1/apps/x/whoami']) {
        assertError(await requestAs(`${server.baseUrl}${path}`), 404, 'NOT_FOUND');
        assertError(await requestAs(`${server.baseUrl}${path}`, bearer(adminToken)), 404, 'NOT_FOUND');
      }
    });

    it('GET /openapi.json: the OpenAPI 3.1 description', async () => {
      const response = await requestAs(`${server.baseUrl}/openapi.json`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(response.body.openapi, '3.1.0');
    });
  });
});

describe('authentication: expired tokens (fake clock)', () => {
  const clock = new FakeClock();
  const server = serverForSuite({ clock });

  it('an expired token: 401 INVALID_TOKEN, on whoami and on the admin feature', async () => {
    const expiresAt = clock.now() + 10_000;
    const admin = await requestToken(server, adminFields(server, { expiresAt }));
    const anonymous = await requestToken(server, anonymousFields(server, { expiresAt }));
    const tokens = [admin.body.access_token as string, anonymous.body.access_token as string];
    for (const token of tokens) assert.equal((await whoami(server.appUrl, bearer(token))).status, 200);
    assert.equal((await requestAs(server.appUrl, bearer(tokens[0] as string))).status, 200);

    clock.time = expiresAt;
    for (const token of tokens) {
      assertInvalidToken(await whoami(server.appUrl, bearer(token)), token);
      assertInvalidToken(await requestAs(server.appUrl, bearer(token)), token);
      assertInvalidToken(await requestAs(`${server.appUrl}/users/me`, bearer(token)), token);
    }
    // Basic anonymous does not expire.
    assert.equal((await whoami(server.appUrl, basic(server.app.appId))).status, 200);
  });
});
