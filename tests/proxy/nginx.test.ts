import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { parseAdminPathRules } from '../../src/auth/forward.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertError, assertInvalidToken, assertUnauthorized, UNAUTHORIZED_CHALLENGE } from '../helpers/assert.js';
import { powAttestation } from '../helpers/attestation.js';
import { documentedNginxConfig } from '../helpers/forward-auth-docs.js';
import {
  adminFields,
  anonymousFields,
  basic,
  bearer,
  request,
  requestAs,
  requestToken,
  revokeToken,
  type JsonResponse,
} from '../helpers/http.js';
import { closeServer } from '../helpers/listen.js';
import { findNginx, startNginx, startUpstream, type RunningNginx, type Seen } from '../helpers/nginx.js';
import { freePort } from '../helpers/process.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startServer, type TestServer } from '../helpers/server.js';

// nginx auth_request in front of an upstream, asking a real Tessera, with the configuration that
// docs/forward-auth.md documents (read from there, so that the documented one is the tested one).

const ADMIN_PATHS = ['/configuration', 'DELETE /objects'];

describe('forward authentication through nginx auth_request', () => {
  let tessera: TestServer;
  let upstream: Server | undefined;
  let nginx: RunningNginx | undefined;
  const seen: Seen[] = [];
  let appPath: string;
  let adminToken: string;
  let anonymousToken: string;
  let basicIdentity: Record<string, string>;
  let anonymousIdentity: Record<string, string>;
  let adminIdentity: Record<string, string>;

  before(async () => {
    const binary = findNginx();
    if (binary === undefined) {
      throw new Error(
        'nginx is not installed (not on PATH, not /usr/sbin/nginx): these tests need it. Install it: apt-get install -y nginx',
      );
    }
    tessera = await startServer({ forwardAuthAdminPaths: parseAdminPathRules(ADMIN_PATHS) });
    upstream = await startUpstream(seen);
    const tesseraAddress = new URL(tessera.baseUrl).host;
    const upstreamAddress = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    nginx = await startNginx(binary, (port) => documentedNginxConfig(tesseraAddress, upstreamAddress, port));

    appPath = `/api/apps/${tessera.app.appId}`;
    const admin = await requestToken(tessera, adminFields(tessera));
    const anonymous = await requestToken(tessera, anonymousFields(tessera));
    assert.equal(admin.status, 200, admin.text);
    assert.equal(anonymous.status, 200, anonymous.text);
    adminToken = admin.body.access_token;
    anonymousToken = anonymous.body.access_token;
    const app = { 'x-tessera-app-id': tessera.app.appId };
    basicIdentity = { ...app, 'x-tessera-principal': 'anonymous', 'x-tessera-principal-id': 'ANONYMOUS', 'x-tessera-auth': 'basic' };
    anonymousIdentity = { ...basicIdentity, 'x-tessera-auth': 'bearer' };
    adminIdentity = { ...app, 'x-tessera-principal': 'admin', 'x-tessera-principal-id': admin.body.id, 'x-tessera-auth': 'bearer' };
  });

  after(async () => {
    await nginx?.stop();
    await closeServer(upstream);
    await tessera?.close();
  });

  function viaNginx(path: string, init: RequestInit = {}): Promise<JsonResponse> {
    return request(`${nginx!.baseUrl}${path}`, init);
  }

  /** Sent verbatim: fetch would resolve "..", "." and "%2e" before sending. */
  async function rawViaNginx(method: string, path: string, headers: Record<string, string> = {}): Promise<JsonResponse> {
    const response = await rawRequest(nginx!.baseUrl, { method, path, headers });
    assert.ok(response !== null, 'nginx closed the connection without answering');
    return response;
  }

  function assertReached(response: JsonResponse, expected: Omit<Seen, 'bodyBytes'> & { bodyBytes?: number }): void {
    assert.equal(response.status, 200, `${response.status} ${response.text}\n${nginx!.log()}`);
    assert.deepEqual(response.body, { bodyBytes: 0, ...expected });
  }

  /** Runs `refused` and asserts that no request reached the upstream meanwhile. */
  async function notReaching<T>(refused: () => Promise<T>): Promise<T> {
    const before = seen.length;
    const result = await refused();
    assert.deepEqual(seen.slice(before), [], 'a refused request reached the upstream');
    return result;
  }

  describe('admitted requests reach the upstream with the identity headers', () => {
    it('Basic anonymous', async () => {
      const response = await viaNginx(`${appPath}/whoami?x=1`, { headers: { authorization: basic(tessera.app.appId) } });
      assertReached(response, { method: 'GET', url: `${appPath}/whoami?x=1`, identity: basicIdentity });
    });

    it('an anonymous token and an admin token, with the request body', async () => {
      const body = 'x'.repeat(20_000); // larger than nginx's in-memory body buffer: goes through its temp files
      for (const [token, identity] of [
        [anonymousToken, anonymousIdentity],
        [adminToken, adminIdentity],
      ] as const) {
        const response = await viaNginx(`${appPath}/objects`, { method: 'POST', headers: { authorization: bearer(token) }, body });
        assertReached(response, { method: 'POST', url: `${appPath}/objects`, identity, bodyBytes: body.length });
      }
    });

    it('an expiring token, with X-Tessera-Expires-At', async () => {
      const expiresAt = Date.now() + 3_600_000;
      const token = await requestToken(tessera, anonymousFields(tessera, { expiresAt }));
      const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token.body.access_token) } });
      const identity = { ...anonymousIdentity, 'x-tessera-expires-at': String(expiresAt) };
      assertReached(response, { method: 'GET', url: `${appPath}/whoami`, identity });
    });

    it('an admin token on an admin-only prefix and on a method rule', async () => {
      const authorization = bearer(adminToken);
      assertReached(await viaNginx(`${appPath}/configuration`, { headers: { authorization } }), {
        method: 'GET',
        url: `${appPath}/configuration`,
        identity: adminIdentity,
      });
      assertReached(await viaNginx(`${appPath}/objects/1`, { method: 'DELETE', headers: { authorization } }), {
        method: 'DELETE',
        url: `${appPath}/objects/1`,
        identity: adminIdentity,
      });
    });

    it("a credential's token, with X-Tessera-Scope, which the upstream decides on", async () => {
      const credential = await tessera.tessera.credentials.create(
        tessera.app.appId,
        { name: 'Reports', scopes: ['reports:read', 'events:read'] },
        OPERATOR,
      );
      const token = await requestToken(tessera, {
        grant_type: 'client_credentials',
        client_id: credential.clientId,
        client_secret: credential.clientSecret,
      });
      assert.equal(token.status, 200, token.text);
      const response = await viaNginx(`${appPath}/reports`, { headers: { authorization: bearer(token.body.access_token) } });
      assertReached(response, {
        method: 'GET',
        url: `${appPath}/reports`,
        identity: { ...adminIdentity, 'x-tessera-scope': 'events:read reports:read' },
      });
    });

    it('an attested anonymous token, with X-Tessera-Attestation-Provider', async () => {
      await tessera.tessera.apps.configure(tessera.app.appId, { anonymousAttestation: 'monitor' }, OPERATOR);
      try {
        const token = await requestToken(tessera, anonymousFields(tessera), {
          'x-tessera-attestation': await powAttestation(tessera.appUrl),
        });
        assert.equal(token.status, 200, token.text);
        const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token.body.access_token) } });
        assertReached(response, {
          method: 'GET',
          url: `${appPath}/whoami`,
          identity: { ...anonymousIdentity, 'x-tessera-attestation-provider': 'pow' },
        });
      } finally {
        await tessera.tessera.apps.configure(tessera.app.appId, { anonymousAttestation: 'off' }, OPERATOR);
      }
    });

    it('JWT access tokens, admin and anonymous, with the same headers, and refused at once once revoked', async () => {
      await tessera.tessera.apps.configure(tessera.app.appId, { accessTokenFormat: 'jwt' }, OPERATOR);
      try {
        const anonymous = (await requestToken(tessera, anonymousFields(tessera))).body.access_token as string;
        const admin = (await requestToken(tessera, adminFields(tessera, { expiresAt: Date.now() + 600_000 }))).body.access_token as string;
        assert.equal(anonymous.split('.').length, 3, 'a JWT');
        const expiresAt = (token: string) => String((decodeJwt(token).exp as number) * 1000);
        assertReached(await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(anonymous) } }), {
          method: 'GET',
          url: `${appPath}/whoami`,
          identity: { ...anonymousIdentity, 'x-tessera-expires-at': expiresAt(anonymous) },
        });
        assertReached(await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(admin) } }), {
          method: 'GET',
          url: `${appPath}/whoami`,
          identity: { ...adminIdentity, 'x-tessera-expires-at': expiresAt(admin) },
        });
        for (const token of [anonymous, admin]) {
          assert.equal((await revokeToken(tessera.appUrl, token, bearer(admin))).status, 200);
          const response = await notReaching(() => viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token) } }));
          assertError(response, 401, 'INVALID_TOKEN');
        }
      } finally {
        await tessera.tessera.apps.configure(tessera.app.appId, { accessTokenFormat: 'opaque' }, OPERATOR);
      }
    });

    it('never with the X-Tessera-* headers a client sends', async () => {
      const forged = {
        'x-tessera-attestation-provider': 'apple',
        'x-tessera-scope': 'credentials:manage',
        'x-tessera-app-id': 'another-app',
        'x-tessera-principal': 'admin',
        'x-tessera-principal-id': 'forged-admin',
        'x-tessera-auth': 'bearer',
        'x-tessera-expires-at': '1',
      };
      const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: basic(tessera.app.appId), ...forged } });
      assertReached(response, { method: 'GET', url: `${appPath}/whoami`, identity: basicIdentity });
    });
  });

  describe('refusals give the client the contract status, JSON body and challenge, and never reach the upstream', () => {
    it('401 INVALID_TOKEN', async () => {
      const response = await notReaching(() => viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer('not-a-token') } }));
      assertInvalidToken(response);
    });

    it('401 UNAUTHORIZED', async () => {
      const response = await notReaching(() => viaNginx(`${appPath}/whoami`));
      assertUnauthorized(response, UNAUTHORIZED_CHALLENGE);
    });

    it('400 ME_NOT_ALLOWED_FOR_ADMIN, in any case', async () => {
      for (const path of [`${appPath}/users/me`, `${appPath}/users/ME`]) {
        const response = await notReaching(() => viaNginx(path, { headers: { authorization: bearer(adminToken) } }));
        assertError(response, 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
      }
    });

    it('403 ADMIN_REQUIRED on an admin-only prefix, in any case', async () => {
      for (const spelling of ['configuration', 'Configuration', 'CONFIGURATION/x']) {
        const path = `${appPath}/${spelling}`;
        for (const authorization of [bearer(anonymousToken), basic(tessera.app.appId)]) {
          const response = await notReaching(() => rawViaNginx('GET', path, { authorization }));
          assertError(response, 403, 'ADMIN_REQUIRED');
        }
      }
    });

    it('400 invalid_request for a spelling an upstream could read otherwise, for every principal', async () => {
      for (const spelling of [
        '%63onfiguration',
        'x/../configuration',
        './configuration',
        '/configuration',
        'users/%6De',
        'configuration;x',
      ]) {
        const path = `${appPath}/${spelling}`;
        for (const authorization of [bearer(adminToken), bearer(anonymousToken), basic(tessera.app.appId)]) {
          const response = await notReaching(() => rawViaNginx('GET', path, { authorization }));
          assertError(response, 400, 'invalid_request');
        }
      }
    });

    it('403 ADMIN_REQUIRED on a method rule, also with a request body', async () => {
      const authorization = bearer(anonymousToken);
      const plain = await notReaching(() => viaNginx(`${appPath}/objects/1`, { method: 'DELETE', headers: { authorization } }));
      assertError(plain, 403, 'ADMIN_REQUIRED');
      const withBody = await notReaching(() =>
        viaNginx(`${appPath}/objects/1`, {
          method: 'DELETE',
          headers: { authorization, 'content-type': 'application/json' },
          body: '{"x":1}',
        }),
      );
      assertError(withBody, 403, 'ADMIN_REQUIRED');
    });

    it('403 ADMIN_REQUIRED even when the client describes another request in X-Original-* or X-Forwarded-*', async () => {
      for (const [uriHeader, methodHeader] of [
        ['x-original-uri', 'x-original-method'],
        ['x-forwarded-uri', 'x-forwarded-method'],
      ] as const) {
        const response = await notReaching(() =>
          viaNginx(`${appPath}/objects/1`, {
            method: 'DELETE',
            headers: { authorization: bearer(anonymousToken), [uriHeader]: `${appPath}/whoami`, [methodHeader]: 'GET' },
          }),
        );
        assertError(response, 403, 'ADMIN_REQUIRED');
      }
    });

    it('404 APP_NOT_FOUND', async () => {
      const authorization = basic('no-such-app');
      const response = await notReaching(() => viaNginx('/api/apps/no-such-app/whoami', { headers: { authorization } }));
      assertError(response, 404, 'APP_NOT_FOUND');
    });

    it('400 invalid_request outside /api/apps/{appId}/ and for an encoded slash', async () => {
      for (const path of ['/elsewhere', `${appPath}/a%2Fb`]) {
        const response = await notReaching(() => viaNginx(path, { headers: { authorization: basic(tessera.app.appId) } }));
        assertError(response, 400, 'invalid_request');
      }
    });

    it('a revoked token, at once', async () => {
      const token = (await requestToken(tessera, anonymousFields(tessera))).body.access_token as string;
      const authorization = bearer(token);
      const admitted = await viaNginx(`${appPath}/whoami`, { headers: { authorization } });
      assertReached(admitted, { method: 'GET', url: `${appPath}/whoami`, identity: anonymousIdentity });
      const revoked = await revokeToken(tessera.appUrl, token);
      assert.equal(revoked.status, 200, revoked.text);
      const response = await notReaching(() => viaNginx(`${appPath}/whoami`, { headers: { authorization } }));
      assertError(response, 401, 'INVALID_TOKEN');
    });

    it('403 ADMIN_REQUIRED for an absolute-form request target', async () => {
      const response = await notReaching(() =>
        rawViaNginx('GET', `http://elsewhere.example${appPath}/configuration`, { authorization: bearer(anonymousToken) }),
      );
      assertError(response, 403, 'ADMIN_REQUIRED');
    });

    it('the auth locations themselves cannot be requested', async () => {
      const response = await notReaching(() => viaNginx('/_tessera_auth', { headers: { authorization: basic(tessera.app.appId) } }));
      assert.equal(response.status, 404);
    });
  });

  it('fails closed when Tessera cannot be reached: 502, and nothing reaches the upstream', async () => {
    const unreachable = `127.0.0.1:${await freePort()}`;
    const upstreamAddress = `127.0.0.1:${(upstream!.address() as AddressInfo).port}`;
    const lonely = await startNginx(findNginx()!, (port) => documentedNginxConfig(unreachable, upstreamAddress, port));
    try {
      const response = await notReaching(() => requestAs(`${lonely.baseUrl}${appPath}/whoami`, basic(tessera.app.appId)));
      assert.equal(response.status, 502, response.text);
    } finally {
      await lonely.stop();
    }
  });
});
