import assert from 'node:assert/strict';
import { DEFAULT_APP_CONFIGURATION } from 'tessera-tokens/internal/apps/app.js';
import { describe, it } from 'node:test';
import { assertError } from '../helpers/assert.js';
import { adminFields, anonymousFields, basic, bearer, request, requestAs, requestToken } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';

let admin: string;

const server = serverForSuite({}, async () => {
  admin = (await requestToken(server, adminFields(server))).body.access_token;
});

const patch = (body: string | object, headers: Record<string, string> = {}) =>
  request(`${server.appUrl}/configuration`, {
    method: 'PATCH',
    headers: { authorization: bearer(admin), 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const configuration = async () => (await requestAs(`${server.appUrl}/configuration`, bearer(admin))).body;
const reset = () => patch({ adminTokenMaxLifetimeSeconds: null, anonymousTokenMaxLifetimeSeconds: null, requireAppKey: false });

describe('GET and PATCH /api/apps/{appId}/configuration', () => {
  it("starts with the seed's behaviour: no maximum lifetimes, no AppKey check", async () => {
    assert.deepEqual(await configuration(), {
      ...DEFAULT_APP_CONFIGURATION,
      adminTokenMaxLifetimeSeconds: null,
      anonymousTokenMaxLifetimeSeconds: null,
      requireAppKey: false,
      allowedOrigins: [],
    });
  });

  it("changes the given fields only, and answers the app's description", async () => {
    const response = await patch({ adminTokenMaxLifetimeSeconds: 3600 }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.appId, server.app.appId);
    assert.equal(response.body.clientId, server.app.clientId);
    assert.equal(JSON.stringify(response.body).includes(server.app.clientSecret), false);
    assert.deepEqual(response.body.configuration, {
      ...DEFAULT_APP_CONFIGURATION,
      adminTokenMaxLifetimeSeconds: 3600,
      anonymousTokenMaxLifetimeSeconds: null,
      requireAppKey: false,
      allowedOrigins: [],
    });
    await patch({ requireAppKey: true });
    assert.deepEqual(await configuration(), {
      ...DEFAULT_APP_CONFIGURATION,
      adminTokenMaxLifetimeSeconds: 3600,
      anonymousTokenMaxLifetimeSeconds: null,
      requireAppKey: true,
      allowedOrigins: [],
    });
    const app = await requestAs(server.appUrl, bearer(admin));
    assert.deepEqual(app.body.configuration, await configuration());
    await reset();
  });

  it('applies a maximum lifetime: beyond it 400 invalid_request; without expiresAt the token gets the maximum', async () => {
    await patch({ anonymousTokenMaxLifetimeSeconds: 60, adminTokenMaxLifetimeSeconds: 120 });
    const tooLate = await requestToken(server, anonymousFields(server, { expiresAt: Date.now() + 61_000 }));
    assertError(tooLate, 400, 'invalid_request');
    const within = await requestToken(server, anonymousFields(server, { expiresAt: Date.now() + 59_000 }));
    assert.equal(within.status, 200);
    const defaulted = await requestToken(server, anonymousFields(server));
    assert.ok(defaulted.body.expires_in >= 59 && defaulted.body.expires_in <= 60, String(defaulted.body.expires_in));
    const adminDefaulted = await requestToken(server, adminFields(server));
    assert.ok(adminDefaulted.body.expires_in >= 119 && adminDefaulted.body.expires_in <= 120);
    assertError(await requestToken(server, adminFields(server, { expiresAt: Date.now() + 121_000 })), 400, 'invalid_request');
    await reset();
    assert.equal((await requestToken(server, anonymousFields(server))).body.expires_in, 2147483646, 'null: back to "never"');
  });

  it('requires the exact AppKey for anonymous tokens when asked', async () => {
    await patch({ requireAppKey: true });
    assertError(await requestToken(server, anonymousFields(server, { client_secret: 'wrong' })), 401, 'invalid_client');
    assert.equal((await requestToken(server, anonymousFields(server))).status, 200);
    await patch({ requireAppKey: null });
    assert.equal((await requestToken(server, anonymousFields(server, { client_secret: 'wrong' }))).status, 200);
  });

  it('refuses anything but known fields of the right type, and changes nothing then', async () => {
    const before = await configuration();
    const bad: (string | object)[] = [
      {},
      [],
      'null',
      '"x"',
      '{"adminTokenMaxLifetimeSeconds": 60',
      { clientSecret: 'mine now' },
      { adminTokenMaxLifetimeSeconds: 60, unknown: 1 },
      { adminTokenMaxLifetimeSeconds: 0 },
      { adminTokenMaxLifetimeSeconds: -5 },
      { adminTokenMaxLifetimeSeconds: 1.5 },
      { adminTokenMaxLifetimeSeconds: '60' },
      { adminTokenMaxLifetimeSeconds: 2147483647 },
      { anonymousTokenMaxLifetimeSeconds: true },
      { requireAppKey: 'yes' },
      { requireAppKey: 1 },
      '{"__proto__": {"requireAppKey": true}}',
    ];
    for (const body of bad) {
      assertError(await patch(body), 400, 'invalid_request');
    }
    assertError(await patch('requireAppKey=true', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    assert.deepEqual(await configuration(), before);
  });

  it('is an admin feature; the ClientSecret cannot be rotated through the API', async () => {
    const anonymous = (await requestToken(server, anonymousFields(server))).body.access_token;
    for (const authorization of [bearer(anonymous), basic(server.app.appId)]) {
      const response = await request(`${server.appUrl}/configuration`, {
        method: 'PATCH',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ requireAppKey: true }),
      });
      assertError(response, 403, 'ADMIN_REQUIRED');
      assertError(await requestAs(`${server.appUrl}/configuration`, authorization), 403, 'ADMIN_REQUIRED');
    }
    const put = await requestAs(`${server.appUrl}/configuration`, bearer(admin), 'PUT');
    assertError(put, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(put.headers.get('allow'), 'GET, HEAD, PATCH');
    for (const path of ['/client-secret', '/rotate-secret', '/secret']) {
      const response = await requestAs(`${server.appUrl}${path}`, bearer(admin), 'POST');
      assertError(response, 404, 'NOT_FOUND');
    }
  });
});
