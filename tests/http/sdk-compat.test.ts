import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import kiiSdk from 'kii-cloud-sdk';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { bearer, request, requestAs, whoami, type JsonResponse } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

/** An SDK instance of its own, pointed at the server as the deployed SDK would be at the hosted service. */
function sdkFor(server: TestServer, appId = server.app.appId, appKey = server.app.appKey) {
  const { Kii } = kiiSdk.create();
  Kii.initializeWithSite(appId, appKey, `${server.baseUrl}/api`);
  return Kii;
}

/** Exactly what `Kii.authenticateAsAppAdmin` sends, on the wire. */
function sdkTokenRequest(
  server: TestServer,
  body: Record<string, unknown>,
  headers: Record<string, string | undefined> = {},
  query = '?disable_cache=123',
): Promise<JsonResponse> {
  const all: Record<string, string | undefined> = {
    'x-kii-appid': server.app.appId,
    'x-kii-appkey': server.app.appKey,
    'content-type': 'application/json',
    ...headers,
  };
  const sent: Record<string, string> = {};
  for (const [name, value] of Object.entries(all)) if (value !== undefined) sent[name] = value;
  return request(`${server.baseUrl}/api/oauth2/token${query}`, { method: 'POST', headers: sent, body: JSON.stringify(body) });
}

function assertTokenShape(response: JsonResponse, id: string, expiresIn: number): void {
  assert.equal(response.status, 200, response.text);
  assert.ok((response.headers.get('content-type') ?? '').startsWith('application/json'));
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.deepEqual(Object.keys(response.body).sort(), ['access_token', 'expires_in', 'id', 'token_type']);
  assert.equal(response.body.id, id);
  assert.equal(response.body.token_type, 'bearer');
  assert.equal(response.body.expires_in, expiresIn);
  assert.equal(typeof response.body.access_token, 'string');
  assert.match(response.body.access_token, /^[A-Za-z0-9._~-]{1,512}$/);
}

describe('the deployed JavaScript SDK (kii-cloud-sdk) against Tessera', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => server.close());

  it('Kii.authenticateAsAppAdmin resolves with a working admin token and the admin id', async () => {
    const Kii = sdkFor(server);
    const context = await Kii.authenticateAsAppAdmin(server.app.clientId, server.app.clientSecret);
    const token = context.getAccessToken();
    assert.equal(typeof token, 'string');
    assert.ok(token.length > 0);
    assert.equal(context._getId(), server.app.adminId);

    const me = await whoami(server.appUrl, bearer(token));
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(me.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt: null });

    const description = await requestAs(server.appUrl, bearer(token));
    assert.equal(description.status, 200, description.text);
    assert.equal(description.body.appId, server.app.appId);
    assert.equal(description.body.clientId, server.app.clientId);
    assert.ok(!description.text.includes(server.app.clientSecret), 'the app description must not contain the ClientSecret');
  });

  it('each authenticateAsAppAdmin gets a new token', async () => {
    const Kii = sdkFor(server);
    const first = await Kii.authenticateAsAppAdmin(server.app.clientId, server.app.clientSecret);
    const second = await Kii.authenticateAsAppAdmin(server.app.clientId, server.app.clientSecret);
    assert.notEqual(first.getAccessToken(), second.getAccessToken());
  });

  it('a wrong ClientSecret rejects with "invalid_client: …"', async () => {
    const Kii = sdkFor(server);
    await assert.rejects(Kii.authenticateAsAppAdmin(server.app.clientId, 'not-the-secret'), (error: unknown) => {
      assert.ok(error instanceof Error, `rejected with ${String(error)}`);
      assert.ok(error.message.startsWith('invalid_client: '), `message: ${error.message}`);
      assert.ok(!error.message.includes('not-the-secret'), 'the error must not echo the secret');
      return true;
    });
  });

  it('an unknown ClientID rejects exactly like a wrong ClientSecret', async () => {
    const Kii = sdkFor(server);
    const messageOf = async (clientId: string, clientSecret: string) => {
      try {
        await Kii.authenticateAsAppAdmin(clientId, clientSecret);
      } catch (error) {
        return (error as Error).message;
      }
      assert.fail('expected a rejection');
    };
    assert.equal(await messageOf('no-such-client-id', 'whatever'), await messageOf(server.app.clientId, 'whatever'));
  });

  it('an unknown AppID rejects with "APP_NOT_FOUND: …"', async () => {
    const Kii = sdkFor(server, 'madeUpAppId0123', 'madeUpAppKey');
    await assert.rejects(Kii.authenticateAsAppAdmin(server.app.clientId, server.app.clientSecret), (error: unknown) => {
      assert.ok(error instanceof Error, `rejected with ${String(error)}`);
      assert.ok(error.message.startsWith('APP_NOT_FOUND: '), `message: ${error.message}`);
      return true;
    });
  });
});

describe('POST /api/oauth2/token, the SDK twin of the token endpoint, over raw HTTP', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => server.close());

  it('answers the exact SDK request with an admin token that never expires', async () => {
    const response = await sdkTokenRequest(server, { client_id: server.app.clientId, client_secret: server.app.clientSecret });
    assertTokenShape(response, server.app.adminId, 2147483646);
    const me = await whoami(server.appUrl, bearer(response.body.access_token));
    assert.equal(me.body?.principal, 'admin', me.text);
  });

  it('works without the cache-busting parameter, and with other unknown query parameters', async () => {
    for (const query of ['', '?disable_cache=1&foo=bar']) {
      const response = await sdkTokenRequest(server, { client_id: server.app.clientId, client_secret: server.app.clientSecret }, {}, query);
      assertTokenShape(response, server.app.adminId, 2147483646);
    }
  });

  it('accepts grant_type=client_credentials when it is sent', async () => {
    const response = await sdkTokenRequest(server, {
      grant_type: 'client_credentials',
      client_id: server.app.clientId,
      client_secret: server.app.clientSecret,
    });
    assertTokenShape(response, server.app.adminId, 2147483646);
  });

  it('issues an anonymous token when client_id is the AppID', async () => {
    const response = await sdkTokenRequest(server, { client_id: server.app.appId, client_secret: server.app.appKey });
    assertTokenShape(response, 'ANONYMOUS', 2147483646);
    const me = await whoami(server.appUrl, bearer(response.body.access_token));
    assert.deepEqual(me.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null });
  });

  it('refuses a grant_type other than client_credentials: 400 unsupported_grant_type', async () => {
    const response = await sdkTokenRequest(server, {
      grant_type: 'password',
      client_id: server.app.clientId,
      client_secret: server.app.clientSecret,
    });
    assertError(response, 400, 'unsupported_grant_type');
  });

  it('refuses a request without X-Kii-AppID with a contract error', async () => {
    const response = await sdkTokenRequest(
      server,
      { client_id: server.app.clientId, client_secret: server.app.clientSecret },
      { 'x-kii-appid': undefined },
    );
    assert.ok(response.status >= 400 && response.status < 500, `status ${response.status}`);
    assert.ok(['invalid_request', 'invalid_client'].includes(response.body?.errorCode), response.text);
    assertError(response, response.status, response.body.errorCode);
    assert.ok(!('access_token' in response.body));
  });

  it('answers an unknown X-Kii-AppID with 404 APP_NOT_FOUND', async () => {
    const response = await sdkTokenRequest(
      server,
      { client_id: server.app.clientId, client_secret: server.app.clientSecret },
      { 'x-kii-appid': 'madeUpAppId0123' },
    );
    assertError(response, 404, 'APP_NOT_FOUND');
  });

  it('answers a wrong ClientSecret with 401 invalid_client, WWW-Authenticate: Basic, no secret echoed', async () => {
    const response = await sdkTokenRequest(server, { client_id: server.app.clientId, client_secret: 'wrong-secret-value' });
    assertError(response, 401, 'invalid_client');
    assert.match(response.headers.get('www-authenticate') ?? '', /^Basic\b/);
    assert.ok(!response.text.includes('wrong-secret-value'));
    // The SDK runs decodeURIComponent over the body before parsing it: it must survive that.
    assert.deepEqual(JSON.parse(decodeURIComponent(response.text)), response.body);
  });

  it('answers a missing client_secret with 400 invalid_request', async () => {
    const response = await sdkTokenRequest(server, { client_id: server.app.clientId });
    assertError(response, 400, 'invalid_request');
  });
});

describe('POST /api/oauth2/token honours expiresAt', () => {
  const clock = new FakeClock();
  let server: TestServer;
  before(async () => {
    server = await startServer({ clock });
  });
  after(async () => server.close());

  it('gives expires_in in whole seconds from now and ends the token at expiresAt', async () => {
    const expiresAt = clock.time + 3_600_500;
    const response = await sdkTokenRequest(server, {
      client_id: server.app.clientId,
      client_secret: server.app.clientSecret,
      expiresAt,
    });
    assertTokenShape(response, server.app.adminId, 3600);
    const whoamiNow = () => whoami(server.appUrl, bearer(response.body.access_token));

    assert.equal((await whoamiNow()).body?.expiresAt, expiresAt);
    clock.time = expiresAt - 1;
    assert.equal((await whoamiNow()).status, 200);
    clock.time = expiresAt + 1;
    const expired = await whoamiNow();
    assertError(expired, 401, 'INVALID_TOKEN');
  });

  it('refuses an expiresAt in the past with 400 invalid_request', async () => {
    const response = await sdkTokenRequest(server, {
      client_id: server.app.appId,
      client_secret: server.app.appKey,
      expiresAt: clock.time - 1000,
    });
    assertError(response, 400, 'invalid_request');
  });
});
