import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import kiiSdk from 'kii-cloud-sdk';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { bearer, request, requestAs, whoami, type JsonResponse } from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';
import Fastify from 'fastify';
import { tesseraAuth } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { basic as basicAuth } from '../helpers/http.js';
import { rawWithHeaderLines } from '../helpers/raw-http.js';
import { listenLocally } from '../helpers/server.js';

/** An SDK instance of its own, pointed at the server as the deployed SDK would be at the hosted service. */
function sdkFor(server: TestServer, appId = server.app.appId, appKey = server.app.appKey) {
  return sdkAt(`${server.baseUrl}/api`, appId, appKey).Kii;
}

/** Every class of an SDK instance of its own, pointed at `site`. */
function sdkAt(site: string, appId: string, appKey: string) {
  const sdk = kiiSdk.create();
  sdk.Kii.initializeWithSite(appId, appKey, site);
  return sdk;
}

/** What an SDK promise rejected with, as text (the SDK rejects with Errors, or with objects holding one). */
async function rejectionOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    const message = (error as { message?: unknown }).message;
    return typeof message === 'string' ? message : String(error);
  }
  return assert.fail('expected a rejection');
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
  const server = serverForSuite();

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

  it("an app with credentials: the app's own ClientID gets what it always got, and a credential works through the SDK too", async () => {
    const credential = await server.tessera.credentials.create(
      server.app.appId,
      { name: 'Beside the SDK', scopes: ['events:read'] },
      OPERATOR,
    );
    const Kii = sdkFor(server);
    const own = await Kii.authenticateAsAppAdmin(server.app.clientId, server.app.clientSecret);
    const me = await whoami(server.appUrl, bearer(own.getAccessToken()));
    assert.deepEqual(me.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt: null });
    assert.equal((await requestAs(server.appUrl, bearer(own.getAccessToken()))).status, 200);
    // The SDK takes a credential's ClientID and ClientSecret as it takes the app's: its token has the credential's scopes.
    const scoped = await Kii.authenticateAsAppAdmin(credential.clientId, credential.clientSecret);
    assert.equal((await whoami(server.appUrl, bearer(scoped.getAccessToken()))).body.scope, 'events:read');
    assert.equal((await requestAs(server.appUrl, bearer(scoped.getAccessToken()))).status, 403);
    await server.tessera.credentials.revoke(server.app.appId, credential.clientId, OPERATOR);
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
  const server = serverForSuite();

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
  const server = serverForSuite({ clock });

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

describe("the deployed SDK's anonymous calls, and its user and thing logins", () => {
  const server = serverForSuite();

  const sdkHeaders = () => ({ 'x-kii-appid': server.app.appId, 'x-kii-appkey': server.app.appKey });

  it('X-Kii-AppID and X-Kii-AppKey without Authorization are Basic anonymous access to the app they name', async () => {
    const response = await request(`${server.appUrl}/whoami`, { headers: sdkHeaders() });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'basic', expiresAt: null });
  });

  it('another app in X-Kii-AppID than in the path, or no X-Kii-AppKey: 401 UNAUTHORIZED', async () => {
    const other = await server.tessera.apps.create('Other app');
    const cases: Record<string, string>[] = [
      { ...sdkHeaders(), 'x-kii-appid': other.appId },
      { 'x-kii-appid': server.app.appId },
      { 'x-kii-appid': server.app.appId, 'x-kii-appkey': '' },
      { 'x-kii-appkey': server.app.appKey },
    ];
    for (const headers of cases) {
      const response = await request(`${server.appUrl}/whoami`, { headers });
      assertError(response, 401, 'UNAUTHORIZED');
      assert.match(response.headers.get('www-authenticate') ?? '', /Basic.*Bearer/);
    }
  });

  it('an Authorization header wins over them: a bad token is still 401 INVALID_TOKEN, a good one its principal', async () => {
    assertError(
      await request(`${server.appUrl}/whoami`, { headers: { ...sdkHeaders(), authorization: bearer('A'.repeat(43)) } }),
      401,
      'INVALID_TOKEN',
    );
    assertError(await request(`${server.appUrl}/whoami`, { headers: { ...sdkHeaders(), authorization: 'Digest x' } }), 401, 'UNAUTHORIZED');
    const admin = await Kii().authenticateAsAppAdmin(server.app.clientId, server.app.clientSecret);
    const me = await request(`${server.appUrl}/whoami`, { headers: { ...sdkHeaders(), authorization: bearer(admin.getAccessToken()) } });
    assert.equal(me.body?.principal, 'admin', me.text);
  });

  it('X-Kii-AppID sent twice: 400 invalid_request', async () => {
    const response = await rawWithHeaderLines(server.baseUrl, {
      method: 'GET',
      path: `/api/apps/${server.app.appId}/whoami`,
      lines: [
        ['X-Kii-AppID', server.app.appId],
        ['X-Kii-AppID', server.app.appId],
        ['X-Kii-AppKey', server.app.appKey],
      ],
    });
    assertError(response, 400, 'invalid_request');
  });

  it('forward authentication admits them as Basic anonymous', async () => {
    const response = await request(`${server.baseUrl}/api/forward-auth`, {
      headers: { ...sdkHeaders(), 'x-original-uri': `/api/apps/${server.app.appId}/buckets/notes/query`, 'x-original-method': 'POST' },
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.headers.get('x-tessera-principal'), 'anonymous');
    assert.equal(response.headers.get('x-tessera-auth'), 'basic');
  });

  it('a path the service does not serve is 404 whatever the content type (the SDK sends types of its own), once authenticated', async () => {
    const things = `${server.appUrl}/things`;
    const body = JSON.stringify({ _vendorThingID: 'v1', _password: 'secret1' });
    for (const type of ['application/vnd.kii.ThingRegistrationAndAuthorizationRequest+json', 'text/plain', 'application/octet-stream']) {
      for (const headers of [sdkHeaders(), { authorization: basicAuth(server.app.appId) }]) {
        assertError(await request(things, { method: 'POST', headers: { ...headers, 'content-type': type }, body }), 404, 'NOT_FOUND');
      }
    }
    assertError(
      await request(things, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.kii.ThingRegistrationAndAuthorizationRequest+json' },
        body,
      }),
      401,
      'UNAUTHORIZED',
    );
    const tooLarge = await request(things, {
      method: 'POST',
      headers: { ...sdkHeaders(), 'content-type': 'application/octet-stream' },
      body: 'x'.repeat(5000),
    });
    assertError(tooLarge, 413, 'REQUEST_TOO_LARGE');
  });

  const Kii = () => sdkFor(server);

  it('the real SDK: its anonymous calls are authenticated (a path this service does not serve is NOT_FOUND, not UNAUTHORIZED)', async () => {
    const { Kii: sdk, KiiThing, KiiQuery } = sdkAt(`${server.baseUrl}/api`, server.app.appId, server.app.appKey);
    assert.match(
      await rejectionOf(KiiThing.register({ _vendorThingID: 'v1', _password: 'secret1' })),
      /statusCode: 404 error code: NOT_FOUND/,
    );
    assert.match(await rejectionOf(sdk.bucketWithName('notes').executeQuery(KiiQuery.queryWithClause(null))), /^NOT_FOUND: /);
  });

  it('the real SDK: its anonymous calls work on a service behind the Fastify middleware', async () => {
    const service = Fastify();
    service.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    await service.register(async (scope) => {
      await scope.register(tesseraAuth, { authenticator: server.tessera.authenticator });
      scope.post('/api/apps/:appId/buckets/:bucket/query', async (request) => ({
        results: [{ _id: '1', principal: request.principal.kind, auth: request.principal.auth }],
      }));
    });
    const base = await listenLocally(service);
    try {
      const { Kii: sdk, KiiQuery } = sdkAt(`${base}/api`, server.app.appId, server.app.appKey);
      const [, results] = await sdk.bucketWithName('notes').executeQuery(KiiQuery.queryWithClause(null));
      assert.deepEqual(
        results.map((object) => [object.get('principal'), object.get('auth')]),
        [['anonymous', 'basic']],
      );
      const { Kii: unknownApp, KiiQuery: query } = sdkAt(`${base}/api`, 'madeUpAppId0123', 'madeUpAppKey');
      assert.match(await rejectionOf(unknownApp.bucketWithName('notes').executeQuery(query.queryWithClause(null))), /^APP_NOT_FOUND: /);
    } finally {
      await service.close();
    }
  });

  it('the real SDK: user and thing logins are refused with unsupported_grant_type, saying only client_credentials is served', async () => {
    const { KiiUser, Kii: sdk } = sdkAt(`${server.baseUrl}/api`, server.app.appId, server.app.appKey);
    for (const message of [
      await rejectionOf(KiiUser.authenticate('alice', 'secret1')),
      await rejectionOf(sdk.authenticateAsThing('thing-1', 'secret1')),
    ]) {
      assert.match(message, /unsupported_grant_type/);
      assert.match(message, /"client_credentials"/);
      assert.doesNotMatch(message, /client_id is required/);
      assert.ok(!message.includes('secret1'));
    }
  });
});
