import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { assertError } from '../helpers/assert.js';
import { adminFields, basic, bearer, request, requestAs, requestToken, whoami } from '../helpers/http.js';
import { rawHttpUntilClosed, rawRequest } from '../helpers/raw-http.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * A path the service routes, asked with a method it does not serve, answers `405` with the path's
 * `Allow` (HEAD goes with GET), every method Node parses included; under `/api/apps/{appId}/` once
 * the request is authenticated. CONNECT, which Node hands to no route, gets the same answer, and the
 * connection is closed after it.
 */

/** Every path of docs/openapi.json but the catch-alls, with the methods it serves. */
const ALLOWED: Record<string, string> = {
  '/healthz': 'GET, HEAD',
  '/readyz': 'GET, HEAD',
  '/openapi.json': 'GET, HEAD',
  '/tessera-client.js': 'GET, HEAD',
  '/api/oauth2/token': 'POST',
  '/api/apps/{appId}/oauth2/token': 'POST',
  '/api/apps/{appId}/oauth2/revoke': 'POST',
  '/api/apps/{appId}/oauth2/introspect': 'POST',
  '/.well-known/oauth-authorization-server/api/apps/{appId}': 'GET, HEAD',
  '/api/apps/{appId}/tokens': 'DELETE',
  '/api/apps/{appId}/whoami': 'GET, HEAD',
  '/api/apps/{appId}': 'GET, HEAD',
  '/api/apps/{appId}/configuration': 'GET, HEAD, PATCH',
  '/api/apps/{appId}/events': 'GET, HEAD',
  '/api/apps/{appId}/events/counts': 'GET, HEAD',
  '/api/apps/{appId}/credentials': 'GET, HEAD, POST',
  '/api/apps/{appId}/credentials/{clientId}': 'DELETE',
  '/api/apps/{appId}/credentials/{clientId}/rotate': 'POST',
  '/api/apps/{appId}/credentials/{clientId}/previous-secret': 'DELETE',
  '/api/apps/{appId}/webhooks': 'GET, HEAD, POST',
  '/api/apps/{appId}/webhooks/{webhookId}': 'GET, HEAD, DELETE',
  '/api/apps/{appId}/webhooks/{webhookId}/rotate-secret': 'POST',
  '/api/apps/{appId}/webhooks/{webhookId}/deliveries': 'GET, HEAD',
  '/api/apps/{appId}/webhooks/{webhookId}/deliveries/{deliveryId}/resend': 'POST',
  '/api/apps/{appId}/attestation/challenge': 'GET, HEAD',
  '/api/apps/{appId}/attestation/debug-tokens': 'GET, HEAD, POST',
  '/api/apps/{appId}/attestation/debug-tokens/{debugTokenId}': 'DELETE',
  '/api/apps/{appId}/attestation/android': 'GET, HEAD, PUT, DELETE',
  '/api/apps/{appId}/attestation/apple': 'GET, HEAD, PUT, DELETE',
  '/api/apps/{appId}/jwks.json': 'GET, HEAD',
  '/api/jwks.json': 'GET, HEAD',
  '/api/status-lists/{list}': 'GET, HEAD',
};
/** Forward authentication answers any method; the catch-all under an app and OpenID discovery's location answer 404 to any. */
const ANY_METHOD = [
  '/api/apps/{appId}/{path}',
  '/api/apps/{appId}/.well-known/openid-configuration',
  '/api/forward-auth',
  '/api/forward-auth/{path}',
];
// Not QUERY: without the Content-Type it must carry (RFC 10008) it is 400 before any route.
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH', 'MKCOL'];

let server: TestServer;
let adminToken: string;

const pathOf = (path: string) =>
  path
    .replace('{appId}', server.app.appId)
    .replace('{clientId}', 'tcl_0123456789abcdef01234567')
    .replace('{debugTokenId}', 'no-such-token')
    .replace('{webhookId}', 'wh_0123456789abcdefghijkl')
    .replace('{deliveryId}', '1');
const connect = (target: string, headers: Record<string, string> = {}) =>
  rawHttpUntilClosed(
    server.baseUrl,
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target.startsWith('/') ? new URL(server.baseUrl).host : target}\r\n` +
      Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      '\r\n',
  );

describe('a known path asked with another method: 405 with Allow', () => {
  before(async () => {
    server = await startServer();
    adminToken = (await requestToken(server, adminFields(server))).body.access_token;
  });
  after(async () => server.close());

  it('the table here names every path of docs/openapi.json', () => {
    const documented = Object.keys(
      (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'docs', 'openapi.json'), 'utf8')) as { paths: object }).paths,
    );
    assert.deepEqual([...Object.keys(ALLOWED), ...ANY_METHOD].sort(), documented.sort());
  });

  for (const [path, allow] of Object.entries(ALLOWED)) {
    const allowed = allow.split(', ');
    const refused = METHODS.filter((method) => !allowed.includes(method) && !(method === 'HEAD' && allowed.includes('GET')));
    it(`${path}: ${refused.join(', ')} -> 405 with Allow: ${allow}`, async () => {
      for (const method of refused) {
        const response = await rawRequest(server.baseUrl, { method, path: pathOf(path), headers: { authorization: bearer(adminToken) } });
        assert.ok(response !== null, `${method} ${path}: no answer`);
        if (method === 'HEAD') assert.equal(response.status, 405, `${method} ${path}`);
        else assertError(response, 405, 'METHOD_NOT_ALLOWED');
        assert.equal(response.headers.get('allow'), allow, `${method} ${path}`);
      }
    });
  }

  it('HEAD goes with GET: /healthz, /openapi.json and whoami answer it as GET, without a body', async () => {
    for (const path of ['/healthz', '/openapi.json', '/api/apps/{appId}/whoami']) {
      const response = await rawRequest(server.baseUrl, {
        method: 'HEAD',
        path: pathOf(path),
        headers: { authorization: basic(server.app.appId) },
      });
      assert.equal(response?.status, 200, `HEAD ${path}`);
      assert.equal(response?.text, '');
    }
  });

  it('under /api/apps/{appId}/ the request is authenticated first: 401 or 404 APP_NOT_FOUND before 405', async () => {
    const whoami = `${server.appUrl}/whoami`;
    assertError(await request(whoami, { method: 'POST' }), 401, 'UNAUTHORIZED');
    assertError(await requestAs(whoami, bearer('A'.repeat(43)), 'POST'), 401, 'INVALID_TOKEN');
    assertError(
      await requestAs(`${server.baseUrl}/api/apps/0000000000000000/whoami`, basic('0000000000000000'), 'POST'),
      404,
      'APP_NOT_FOUND',
    );
    assertError(await requestAs(whoami, basic(server.app.appId), 'POST'), 405, 'METHOD_NOT_ALLOWED');
    // The token path and the paths outside an app need no credentials to say so.
    for (const path of ['/api/apps/{appId}/oauth2/token', '/healthz', '/readyz', '/openapi.json']) {
      assertError(await request(`${server.baseUrl}${pathOf(path)}`, { method: 'PUT' }), 405, 'METHOD_NOT_ALLOWED');
    }
  });
});

describe("CONNECT: answered in the contract's shape, then the connection is closed", () => {
  before(async () => {
    server = await startServer();
  });
  after(async () => server.close());

  it('to a known path: 405 with the Allow of the path, after authentication under an app', async () => {
    for (const [path, allow] of [
      ['/api/apps/{appId}/whoami', 'GET, HEAD'],
      ['/api/apps/{appId}/configuration', 'GET, HEAD, PATCH'],
      ['/api/apps/{appId}/oauth2/token', 'POST'],
      ['/api/oauth2/token', 'POST'],
      ['/healthz', 'GET, HEAD'],
      ['/openapi.json', 'GET, HEAD'],
    ] as const) {
      const response = await connect(pathOf(path), { Authorization: basic(server.app.appId) });
      assert.ok(response !== null, `CONNECT ${path}: closed without an answer`);
      assertError(response, 405, 'METHOD_NOT_ALLOWED');
      assert.equal(response.headers.get('allow'), allow, `CONNECT ${path}`);
      assert.equal(response.headers.get('connection'), 'close');
    }
    const unauthenticated = await connect(pathOf('/api/apps/{appId}/whoami'));
    assert.ok(unauthenticated !== null);
    assertError(unauthenticated, 401, 'UNAUTHORIZED');
    assert.match(unauthenticated.headers.get('www-authenticate') ?? '', /^Basic realm="tessera", Bearer/);
  });

  it('to a path that does not exist: 404', async () => {
    for (const path of ['/nowhere', '/api/apps/{appId}/nowhere']) {
      const response = await connect(pathOf(path), { Authorization: basic(server.app.appId) });
      assert.ok(response !== null, `CONNECT ${path}: closed without an answer`);
      assertError(response, 404, 'NOT_FOUND');
    }
  });

  it('to another host (authority form): 405 with an empty Allow, saying that no tunnel is opened', async () => {
    for (const target of ['example.com:443', `127.0.0.1:${new URL(server.baseUrl).port}`]) {
      const response = await connect(target);
      assert.ok(response !== null, `CONNECT ${target}: closed without an answer`);
      assertError(response, 405, 'METHOD_NOT_ALLOWED');
      assert.equal(response.headers.get('allow'), '');
      assert.match(response.body.message, /tunnel/);
    }
  });

  it('never a 2xx, which would say the tunnel is open: not even from forward authentication, which answers any other method', async () => {
    const response = await connect(`/api/forward-auth/api/apps/${server.app.appId}/whoami`, { Authorization: basic(server.app.appId) });
    assert.ok(response !== null);
    assertError(response, 405, 'METHOD_NOT_ALLOWED');
    assert.ok(!(response.headers.get('allow') ?? '').split(', ').includes('CONNECT'));
    assert.equal(response.headers.get('x-tessera-app-id'), null);
  });

  it('the server goes on serving', async () => {
    const response = await whoami(server.appUrl, basic(server.app.appId));
    assert.equal(response.status, 200, response.text);
  });
});
