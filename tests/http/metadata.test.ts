import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildServer } from '../../src/server.js';
import { createTessera } from '../../src/tessera.js';
import { assertError } from '../helpers/assert.js';
import { rawRequest } from '../helpers/raw-http.js';
import { NO_LIMITS, serverForSuite } from '../helpers/server.js';
import { createTestStore } from '../helpers/store.js';
import { request } from '../helpers/http.js';

/**
 * RFC 8414 metadata of each app, at `/.well-known/oauth-authorization-server/api/apps/{appId}`: its
 * issuer is `{base}/api/apps/{appId}`, the base from PUBLIC_URL (or, unset, the loopback address the
 * server listens on), never from the request's Host header.
 */

const METHODS = ['client_secret_basic', 'client_secret_post'];
const wellKnown = (base: string, appId: string, prefix = '') => `${base}/.well-known/oauth-authorization-server${prefix}/api/apps/${appId}`;

function expectedMetadata(issuer: string) {
  return {
    issuer,
    token_endpoint: `${issuer}/oauth2/token`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    introspection_endpoint: `${issuer}/oauth2/introspect`,
    jwks_uri: `${issuer}/jwks.json`,
    grant_types_supported: ['client_credentials'],
    response_types_supported: [],
    scopes_supported: [
      'app:read',
      'configuration:read',
      'configuration:write',
      'events:read',
      'tokens:introspect',
      'tokens:revoke',
      'credentials:manage',
      'webhooks:manage',
    ],
    token_endpoint_auth_methods_supported: METHODS,
    revocation_endpoint_auth_methods_supported: METHODS,
    introspection_endpoint_auth_methods_supported: METHODS,
  };
}

describe('without PUBLIC_URL, on a loopback address (npm start on a laptop)', () => {
  const server = serverForSuite();

  it('serves the metadata with the URL the server listens on, whatever Host says', async () => {
    const response = await rawRequest(server.baseUrl, {
      method: 'GET',
      path: new URL(wellKnown(server.baseUrl, server.app.appId)).pathname,
      headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    });
    assert.ok(response !== null);
    assert.equal(response.status, 200, response.text);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(JSON.parse(response.text), expectedMetadata(server.appUrl));
    assert.ok(!response.text.includes('evil.example'));
    // Nothing secret in it: no ClientID, no AppKey.
    assert.ok(!response.text.includes(server.app.clientId) && !response.text.includes(server.app.appKey));
  });

  it('an unknown app: 404 APP_NOT_FOUND; another method: 405 with Allow: GET, HEAD; HEAD works', async () => {
    assertError(await request(wellKnown(server.baseUrl, '0000000000000000')), 404, 'APP_NOT_FOUND');
    const post = await request(wellKnown(server.baseUrl, server.app.appId), { method: 'POST' });
    assertError(post, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    assert.equal((await request(wellKnown(server.baseUrl, server.app.appId), { method: 'HEAD' })).status, 200);
  });

  it("OpenID discovery's location answers 404 saying where the OAuth metadata is, without credentials", async () => {
    const response = await request(`${server.appUrl}/.well-known/openid-configuration`);
    assertError(response, 404, 'NOT_FOUND');
    assert.match(response.body.message, /oauth-authorization-server/);
    assert.match(response.body.message, /algorithm "oauth2"/);
  });
});

describe('with PUBLIC_URL', () => {
  const server = serverForSuite({ publicUrl: 'https://tokens.example.com/tessera' });

  it('names the public URL, with its path, at the RFC 8414 location and at the plain one', async () => {
    const issuer = `https://tokens.example.com/tessera/api/apps/${server.app.appId}`;
    for (const url of [wellKnown(server.baseUrl, server.app.appId, '/tessera'), wellKnown(server.baseUrl, server.app.appId)]) {
      const response = await request(url, { headers: { 'x-forwarded-host': 'evil.example' } });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, expectedMetadata(issuer));
    }
  });
});

describe('without PUBLIC_URL, on an address that is not loopback', () => {
  it('serves no metadata: 404 NOT_FOUND saying that the operator sets PUBLIC_URL', async () => {
    const testStore = await createTestStore();
    const tessera = createTessera({ store: testStore.store, rateLimits: NO_LIMITS });
    const app = await tessera.apps.create('Exposed');
    const server = buildServer({ tessera });
    // Every address of the machine; the test speaks to it over loopback only.
    await server.listen({ host: '0.0.0.0', port: 0 });
    try {
      const port = (server.server.address() as { port: number }).port;
      const response = await request(wellKnown(`http://127.0.0.1:${port}`, app.appId));
      assertError(response, 404, 'NOT_FOUND');
      assert.match(response.body.message, /PUBLIC_URL/);
    } finally {
      await server.close();
      await tessera.events.flush();
      await tessera.limits.close();
      await testStore.dispose();
    }
  });
});
