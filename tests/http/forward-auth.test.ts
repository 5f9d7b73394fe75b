import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { parseAdminPathRules } from '../../src/auth/forward.js';
import { assertError, assertInvalidToken, assertUnauthorized, UNAUTHORIZED_CHALLENGE } from '../helpers/assert.js';
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
import { rawRequest, rawWithHeaderLines } from '../helpers/raw-http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

// Forward authentication (/api/forward-auth) as each kind of reverse proxy asks it, through a real server.

const ADMIN_PATHS = ['/configuration', 'DELETE /objects', 'GET /reports'];

/** How a proxy passes the original request: nginx and Traefik in headers, Envoy in the path and method. */
const STYLES = ['nginx', 'traefik', 'envoy'] as const;
type Style = (typeof STYLES)[number];

interface Original {
  /** The original request URI, e.g. /api/apps/APP/whoami?x=1 */
  uri: string;
  method?: string;
  authorization?: string;
  /** Envoy may forward the original body (with_request_body). */
  body?: string;
  contentType?: string;
}

async function ask(server: TestServer, style: Style, original: Original): Promise<JsonResponse> {
  const method = original.method ?? 'GET';
  const headers: Record<string, string> = {};
  if (original.authorization !== undefined) headers.authorization = original.authorization;
  if (style === 'envoy') {
    if (original.contentType !== undefined) headers['content-type'] = original.contentType;
    // Verbatim: fetch would resolve "..", "." and "%2e" in the path before sending it.
    const response = await rawRequest(server.baseUrl, {
      method,
      path: `/api/forward-auth${original.uri}`,
      headers,
      ...(original.body === undefined ? {} : { body: original.body }),
    });
    assert.ok(response !== null, 'the server closed the connection without answering');
    return response;
  }
  const [uriHeader, methodHeader] = style === 'nginx' ? ['x-original-uri', 'x-original-method'] : ['x-forwarded-uri', 'x-forwarded-method'];
  headers[uriHeader] = original.uri;
  headers[methodHeader] = method;
  // Traefik always asks with GET; nginx's auth_request subrequest has the original method, without a body.
  return request(`${server.baseUrl}/api/forward-auth`, { method: style === 'nginx' ? method : 'GET', headers });
}

function identityOf(response: JsonResponse): Record<string, string> {
  return Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('x-tessera-')));
}

function assertAdmitted(response: JsonResponse, identity: Record<string, string>): void {
  assert.equal(response.status, 200, response.text);
  assert.deepEqual(identityOf(response), identity);
  assert.equal(response.text, '');
  assert.equal(response.headers.get('cache-control'), 'no-store');
}

/** `assertInvalidToken`, with no identity for the proxy to pass on. */
function assertInvalidTokenWithoutIdentity(response: JsonResponse): void {
  assertInvalidToken(response);
  assert.deepEqual(identityOf(response), {});
}

/** `assertUnauthorized` with the exact challenge, and no identity for the proxy to pass on. */
function assertUnauthorizedWithoutIdentity(response: JsonResponse): void {
  assertUnauthorized(response, UNAUTHORIZED_CHALLENGE);
  assert.deepEqual(identityOf(response), {});
}

describe('forward authentication', () => {
  const server = serverForSuite({ forwardAuthAdminPaths: parseAdminPathRules(ADMIN_PATHS) });
  let appPath: string;
  let adminToken: string;
  let adminId: string;
  let anonymousToken: string;
  let anonymousIdentity: Record<string, string>;
  let adminIdentity: Record<string, string>;

  before(async () => {
    appPath = `/api/apps/${server.app.appId}`;
    const admin = await requestToken(server, adminFields(server));
    assert.equal(admin.status, 200, admin.text);
    adminToken = admin.body.access_token;
    adminId = admin.body.id;
    const anonymous = await requestToken(server, anonymousFields(server));
    assert.equal(anonymous.status, 200, anonymous.text);
    anonymousToken = anonymous.body.access_token;
    anonymousIdentity = {
      'x-tessera-app-id': server.app.appId,
      'x-tessera-principal': 'anonymous',
      'x-tessera-principal-id': 'ANONYMOUS',
      'x-tessera-auth': 'bearer',
    };
    adminIdentity = {
      'x-tessera-app-id': server.app.appId,
      'x-tessera-principal': 'admin',
      'x-tessera-principal-id': adminId,
      'x-tessera-auth': 'bearer',
    };
  });

  for (const style of STYLES) {
    describe(`asked as ${style} asks`, () => {
      it('admits Basic anonymous with its identity', async () => {
        const response = await ask(server, style, { uri: `${appPath}/whoami`, authorization: basic(server.app.appId) });
        assertAdmitted(response, { ...anonymousIdentity, 'x-tessera-auth': 'basic' });
      });

      it('admits an anonymous token and an admin token with their identities', async () => {
        assertAdmitted(await ask(server, style, { uri: `${appPath}/whoami`, authorization: bearer(anonymousToken) }), anonymousIdentity);
        assertAdmitted(await ask(server, style, { uri: `${appPath}/whoami`, authorization: bearer(adminToken) }), adminIdentity);
      });

      it('tells when an expiring token expires', async () => {
        const expiresAt = Date.now() + 3_600_000;
        const token = await requestToken(server, anonymousFields(server, { expiresAt }));
        assert.equal(token.status, 200, token.text);
        const response = await ask(server, style, { uri: `${appPath}/whoami`, authorization: bearer(token.body.access_token) });
        assertAdmitted(response, { ...anonymousIdentity, 'x-tessera-expires-at': String(expiresAt) });
      });

      it('refuses an invalid token with 401 INVALID_TOKEN and its challenge', async () => {
        assertInvalidTokenWithoutIdentity(await ask(server, style, { uri: `${appPath}/whoami`, authorization: bearer('not-a-token') }));
      });

      it('refuses a request without credentials with 401 UNAUTHORIZED and both challenges', async () => {
        assertUnauthorizedWithoutIdentity(await ask(server, style, { uri: `${appPath}/whoami` }));
        assertUnauthorizedWithoutIdentity(await ask(server, style, { uri: `${appPath}/whoami`, authorization: basic('another-app') }));
      });

      it('refuses an admin token on a path with a "me" segment, in any case', async () => {
        for (const uri of [`${appPath}/users/me`, `${appPath}/users/me/things?x=1`, `${appPath}/users/ME`, `${appPath}/users/Me/x`]) {
          assertError(await ask(server, style, { uri, authorization: bearer(adminToken) }), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
        }
        assertAdmitted(await ask(server, style, { uri: `${appPath}/users/me`, authorization: bearer(anonymousToken) }), anonymousIdentity);
        assertAdmitted(await ask(server, style, { uri: `${appPath}/users/meme?me`, authorization: bearer(adminToken) }), adminIdentity);
      });

      it('refuses anything but an admin token under an admin prefix with 403 ADMIN_REQUIRED, in any case', async () => {
        for (const uri of [
          `${appPath}/configuration`,
          `${appPath}/configuration/mail?x=1`,
          `${appPath}/Configuration`,
          `${appPath}/CONFIGURATION/`,
        ]) {
          for (const method of ['GET', 'POST']) {
            for (const authorization of [bearer(anonymousToken), basic(server.app.appId)]) {
              assertError(await ask(server, style, { uri, method, authorization }), 403, 'ADMIN_REQUIRED');
            }
            assertAdmitted(await ask(server, style, { uri, method, authorization: bearer(adminToken) }), adminIdentity);
          }
        }
      });

      it('refuses with 400 invalid_request, for every principal, a URI an upstream could read two ways', async () => {
        for (const uri of [
          `${appPath}/%63onfiguration`,
          `${appPath}/./configuration`,
          `${appPath}/x/../configuration`,
          `${appPath}/x/%2e%2e/configuration`,
          `${appPath}//configuration`,
          `${appPath}/configuration;x=1`,
          `${appPath}/users/%6De`,
          `${appPath}/a%5Cb`,
          `${appPath}/a%00b`,
          `/api/apps/another-app/files/%2e%2e/%2e%2e/${server.app.appId}/files/x`,
        ]) {
          for (const authorization of [bearer(adminToken), bearer(anonymousToken), basic(server.app.appId)]) {
            const response = await ask(server, style, { uri, authorization });
            assertError(response, 400, 'invalid_request');
            assert.deepEqual(identityOf(response), {}, uri);
          }
        }
      });

      it('matches an admin prefix on whole segments', async () => {
        const response = await ask(server, style, { uri: `${appPath}/configurations`, authorization: bearer(anonymousToken) });
        assertAdmitted(response, anonymousIdentity);
      });

      it('applies a GET rule to HEAD too', async () => {
        const response = await ask(server, style, { uri: `${appPath}/reports/1`, method: 'HEAD', authorization: bearer(anonymousToken) });
        // nginx and Envoy ask with the original method: an answer to HEAD has no body.
        if (style === 'traefik') assertError(response, 403, 'ADMIN_REQUIRED');
        else assert.equal(response.status, 403);
        assertAdmitted(
          await ask(server, style, { uri: `${appPath}/reports/1`, method: 'POST', authorization: bearer(anonymousToken) }),
          anonymousIdentity,
        );
      });

      it('applies a method rule to that method only', async () => {
        const uri = `${appPath}/objects/1`;
        assertError(await ask(server, style, { uri, method: 'DELETE', authorization: bearer(anonymousToken) }), 403, 'ADMIN_REQUIRED');
        assertAdmitted(await ask(server, style, { uri, method: 'DELETE', authorization: bearer(adminToken) }), adminIdentity);
        for (const method of ['GET', 'PUT', 'POST']) {
          assertAdmitted(await ask(server, style, { uri, method, authorization: bearer(anonymousToken) }), anonymousIdentity);
        }
      });

      it('answers 404 APP_NOT_FOUND for an unknown app', async () => {
        const response = await ask(server, style, { uri: '/api/apps/no-such-app/whoami', authorization: basic('no-such-app') });
        assertError(response, 404, 'APP_NOT_FOUND');
      });

      it('answers 400 invalid_request for a URI that is not under /api/apps/{appId}', async () => {
        for (const uri of ['/healthz', '/api/apps/', `${appPath}/a%2Fb`, `${appPath}/%zz`, `${appPath}/..`]) {
          assertError(await ask(server, style, { uri, authorization: basic(server.app.appId) }), 400, 'invalid_request');
        }
      });

      it('refuses a token as soon as it is revoked', async () => {
        const token = await requestToken(server, anonymousFields(server));
        const accessToken = token.body.access_token as string;
        assertAdmitted(await ask(server, style, { uri: `${appPath}/whoami`, authorization: bearer(accessToken) }), anonymousIdentity);
        const revoked = await revokeToken(server.appUrl, accessToken);
        assert.equal(revoked.status, 200, revoked.text);
        assertInvalidTokenWithoutIdentity(await ask(server, style, { uri: `${appPath}/whoami`, authorization: bearer(accessToken) }));
      });
    });
  }

  describe('the original request', () => {
    it('is required: 400 invalid_request without a URI header or a path after /api/forward-auth', async () => {
      const authorization = basic(server.app.appId);
      for (const url of [`${server.baseUrl}/api/forward-auth`, `${server.baseUrl}/api/forward-auth?uri=${appPath}/whoami`]) {
        assertError(await requestAs(url, authorization), 400, 'invalid_request');
      }
      const empty = await request(`${server.baseUrl}/api/forward-auth`, { headers: { authorization, 'x-original-uri': '' } });
      assertError(empty, 400, 'invalid_request');
    });

    it('keeps its method when the method header is missing (nginx auth_request keeps it anyway)', async () => {
      const response = await request(`${server.baseUrl}/api/forward-auth`, {
        method: 'DELETE',
        headers: { authorization: bearer(anonymousToken), 'x-original-uri': `${appPath}/objects/1` },
      });
      assertError(response, 403, 'ADMIN_REQUIRED');
    });

    it('may come with a body of any type up to the body limit, which is ignored (Envoy with_request_body)', async () => {
      const uri = `${appPath}/objects`;
      for (const [contentType, body] of [
        ['application/json', JSON.stringify({ big: 'x'.repeat(4000) })],
        ['application/json', '{not json'],
        ['application/x-www-form-urlencoded', 'a=b&c=%zz'],
        ['application/octet-stream', 'x'.repeat(4096)],
        [undefined, 'no content type'],
      ] as const) {
        const response = await ask(server, 'envoy', {
          uri,
          method: 'POST',
          authorization: bearer(anonymousToken),
          body,
          ...(contentType === undefined ? {} : { contentType }),
        });
        assertAdmitted(response, anonymousIdentity);
      }
    });

    it('with a body over the limit (4096 bytes): 413 REQUEST_TOO_LARGE', async () => {
      for (const contentType of ['application/json', 'application/octet-stream']) {
        const response = await ask(server, 'envoy', {
          uri: `${appPath}/objects`,
          method: 'POST',
          authorization: bearer(anonymousToken),
          body: 'x'.repeat(64 * 1024),
          contentType,
        });
        assertError(response, 413, 'REQUEST_TOO_LARGE');
      }
    });

    it('with a body, still gets the error of the contract', async () => {
      const response = await ask(server, 'envoy', {
        uri: `${appPath}/objects/1`,
        method: 'DELETE',
        authorization: bearer(anonymousToken),
        body: '{"x":1}',
        contentType: 'application/json',
      });
      assertError(response, 403, 'ADMIN_REQUIRED');
    });
  });

  describe('sources of the original request that disagree', () => {
    // A proxy sets one source and may pass the others on from the client, who could otherwise have
    // another request checked than the one it makes.
    async function headerStyle(headers: Record<string, string>, method = 'GET'): Promise<JsonResponse> {
      return request(`${server.baseUrl}/api/forward-auth`, { method, headers: { authorization: bearer(anonymousToken), ...headers } });
    }

    it('refuse a client X-Original-URI beside the X-Forwarded-Uri of Traefik', async () => {
      const response = await headerStyle({
        'x-forwarded-uri': `${appPath}/configuration`,
        'x-forwarded-method': 'GET',
        'x-original-uri': `${appPath}/whoami`,
      });
      assertError(response, 400, 'invalid_request');
    });

    it('refuse a client X-Original-Method beside the X-Forwarded-Method of Traefik', async () => {
      const response = await headerStyle({
        'x-forwarded-uri': `${appPath}/objects/1`,
        'x-forwarded-method': 'DELETE',
        'x-original-method': 'GET',
      });
      assertError(response, 400, 'invalid_request');
    });

    it('refuse a URI or method header that differs from the Envoy path or method', async () => {
      const authorization = bearer(anonymousToken);
      const conflicting: Record<string, string>[] = [
        { 'x-original-uri': `${appPath}/whoami` },
        { 'x-forwarded-method': 'GET' },
        { 'x-original-method': 'GET' },
      ];
      for (const headers of conflicting) {
        const response = await rawRequest(server.baseUrl, {
          method: 'DELETE',
          path: `/api/forward-auth${appPath}/objects/1`,
          headers: { authorization, ...headers },
        });
        assert.ok(response !== null);
        assertError(response, 400, 'invalid_request');
      }
    });

    it('are fine when they agree', async () => {
      const uri = `${appPath}/objects/1`;
      const agreeing = await headerStyle({
        'x-original-uri': uri,
        'x-forwarded-uri': uri,
        'x-original-method': 'DELETE',
        'x-forwarded-method': 'DELETE',
      });
      assertError(agreeing, 403, 'ADMIN_REQUIRED');
      const envoy = await rawRequest(server.baseUrl, {
        method: 'GET',
        path: `/api/forward-auth${uri}`,
        headers: { authorization: bearer(anonymousToken), 'x-original-uri': uri, 'x-original-method': 'GET' },
      });
      assert.ok(envoy !== null);
      assertAdmitted(envoy, anonymousIdentity);
    });

    it("do not include the method of a header-style request, which is the proxy's own", async () => {
      // Traefik asks with GET whatever the original method.
      const response = await headerStyle({ 'x-forwarded-uri': `${appPath}/objects/1`, 'x-forwarded-method': 'DELETE' }, 'GET');
      assertError(response, 403, 'ADMIN_REQUIRED');
    });
  });

  describe('a header forward authentication reads, sent twice', () => {
    // Node would join two X-Original-URI headers with ", " and keep the first of two Authorization
    // headers: either way the value checked may not be the one a proxy or upstream acts on.
    const twice = (name: string, first: string, second: string, others: Record<string, string>) =>
      rawWithHeaderLines(server.baseUrl, {
        method: 'GET',
        path: '/api/forward-auth',
        lines: [...Object.entries(others), [name, first], [name, second]],
      });

    it('is refused with 400 invalid_request', async () => {
      const uri = `${appPath}/whoami`;
      const cases: [string, string, string, Record<string, string>][] = [
        ['X-Original-URI', uri, uri, { authorization: bearer(adminToken) }],
        ['X-Original-URI', `${appPath}/users/me`, `${appPath}/x`, { authorization: bearer(adminToken) }],
        ['x-forwarded-uri', uri, `${appPath}/configuration`, { authorization: bearer(anonymousToken) }],
        ['X-Original-Method', 'GET', 'DELETE', { authorization: bearer(anonymousToken), 'x-original-uri': `${appPath}/objects/1` }],
        ['X-Forwarded-Method', 'DELETE', 'GET', { authorization: bearer(anonymousToken), 'x-forwarded-uri': `${appPath}/objects/1` }],
        ['Authorization', bearer(adminToken), basic(server.app.appId), { 'x-original-uri': uri }],
        ['authorization', basic(server.app.appId), basic(server.app.appId), { 'x-original-uri': uri }],
      ];
      for (const [name, first, second, others] of cases) {
        const response = await twice(name, first, second, others);
        assertError(response, 400, 'invalid_request');
        assert.deepEqual(identityOf(response), {}, name);
      }
    });
  });

  it('refuses an admin token on a "me" segment hidden behind an encoded "?" (%3F)', async () => {
    const response = await ask(server, 'nginx', { uri: `${appPath}/%3F/me`, authorization: bearer(adminToken) });
    assertError(response, 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
  });
});
