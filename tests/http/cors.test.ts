import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import { adminFields, anonymousFields, basic, bearer, request, requestAs, requestToken, type JsonResponse } from '../helpers/http.js';
import { createDeveloper } from '../helpers/portal.js';
import { signInOverHttp } from '../helpers/portal-http.js';
import { serverForSuite } from '../helpers/server.js';

/**
 * CORS per app (`allowedOrigins`), on the wire: what a browser reads of each answer. The browser
 * itself acting on these answers is tests/browser/.
 */

const PAGE = 'https://app.example.com';
const OTHER_PAGE = 'https://evil.example.net';
const CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
];

let admin: string;
const server = serverForSuite({}, async () => {
  await server.tessera.apps.configure(server.app.appId, { allowedOrigins: [PAGE, 'https://*.example.org'] }, OPERATOR);
  admin = (await requestToken(server, adminFields(server))).body.access_token;
});
const limited = serverForSuite(
  {
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 2,
      adminFailuresPerAddressPerMinute: 100,
      adminFailuresPerAppPerMinute: 100,
    },
  },
  async () => {
    await limited.tessera.apps.configure(limited.app.appId, { allowedOrigins: [PAGE] }, OPERATOR);
  },
);

function preflight(url: string, origin: string, method = 'GET', headers = 'authorization'): Promise<JsonResponse> {
  return request(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

function from(origin: string, url: string, init: RequestInit = {}): Promise<JsonResponse> {
  return request(url, { ...init, headers: { ...(init.headers as Record<string, string>), origin } });
}

/**
 * What a browser needs to read the answer from `origin`: the origin itself, `Vary: Origin`, the
 * exposed headers (the request's id among them, which every answer carries); never credentials.
 */
function assertReadableBy(response: JsonResponse, origin: string): void {
  assert.equal(response.headers.get('access-control-allow-origin'), origin, `${response.status} ${response.text}`);
  assert.match(response.headers.get('vary') ?? '', /\bOrigin\b/);
  assert.equal(response.headers.get('access-control-expose-headers'), 'WWW-Authenticate, Retry-After, X-Request-Id');
  assert.ok(response.headers.get('x-request-id'), `no X-Request-Id on ${response.status}`);
  assert.equal(response.headers.get('access-control-allow-credentials'), null);
}

function assertNoCors(response: JsonResponse): void {
  for (const name of CORS_HEADERS) assert.equal(response.headers.get(name), null, `${name} on ${response.status} ${response.text}`);
}

describe('allowedOrigins in the app configuration', () => {
  const patch = (body: object) =>
    request(`${server.appUrl}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('is set through PATCH …/configuration in canonical form, shown by GET …/configuration and GET /api/apps/{appId}, and recorded', async () => {
    const app = await createConfiguredApp(server, {});
    const appAdmin = (await requestToken(app, adminFields(app))).body.access_token;
    const changed = await request(`${app.appUrl}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(appAdmin), 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ allowedOrigins: ['HTTPS://Shop.Example.com:443/', 'http://localhost:5173', 'https://shop.example.com'] }),
    });
    assert.equal(changed.status, 200, changed.text);
    const expected = ['https://shop.example.com', 'http://localhost:5173'];
    assert.deepEqual(changed.body.configuration.allowedOrigins, expected);
    assert.deepEqual((await requestAs(`${app.appUrl}/configuration`, bearer(appAdmin))).body.allowedOrigins, expected);
    assert.deepEqual((await requestAs(app.appUrl, bearer(appAdmin))).body.configuration.allowedOrigins, expected);
    const events = await requestAs(`${app.appUrl}/events?type=app.configuration_changed`, bearer(appAdmin));
    assert.deepEqual(events.body.events[0].details, { allowedOrigins: expected });

    const cleared = await request(`${app.appUrl}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(appAdmin), 'content-type': 'application/json' },
      body: JSON.stringify({ allowedOrigins: null }),
    });
    assert.deepEqual(cleared.body.configuration.allowedOrigins, []);
  });

  it('refuses a list with anything but origins, and then changes nothing', async () => {
    const before = (await requestAs(`${server.appUrl}/configuration`, bearer(admin))).body;
    for (const allowedOrigins of [
      'https://app.example.com',
      ['https://app.example.com/path'],
      ['https://app.example.com?q'],
      ['https://app.example.com#f'],
      ['https://user@app.example.com'],
      ['ftp://app.example.com'],
      ['*'],
      ['https://*.com'],
      ['null'],
      [42],
      [`https://${'a'.repeat(300)}.example`],
      Array.from({ length: 101 }, (_, index) => `https://app${index}.example.com`),
    ]) {
      const response = await patch({ allowedOrigins });
      assertError(response, 400, 'invalid_request');
    }
    assert.deepEqual((await requestAs(`${server.appUrl}/configuration`, bearer(admin))).body, before);
  });

  it('takes the longest list the rules allow: 100 origins of 300 characters; a larger body is 413', async () => {
    const app = await createConfiguredApp(server, {});
    const appAdmin = (await requestToken(app, adminFields(app))).body.access_token;
    const send = (allowedOrigins: string[]) =>
      request(`${app.appUrl}/configuration`, {
        method: 'PATCH',
        headers: { authorization: bearer(appAdmin), 'content-type': 'application/json' },
        body: JSON.stringify({ allowedOrigins }),
      });
    // `https://`, four labels of 63 characters, one of 32, `.com`: 300 characters, told apart by the first label.
    const longest = Array.from(
      { length: 100 },
      (_, index) =>
        `https://${String(index).padStart(3, '0')}${'a'.repeat(60)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(32)}.com`,
    );
    assert.equal(longest[0]!.length, 300);
    const accepted = await send(longest);
    assert.equal(accepted.status, 200, accepted.text.slice(0, 300));
    assert.equal(accepted.body.configuration.allowedOrigins.length, 100);
    assertError(await send([...longest, ...longest.slice(0, 10)].map((origin) => `${origin}   `)), 413, 'REQUEST_TOO_LARGE');
  });
});

describe('preflights under /api/apps/{appId}/, answered before authentication', () => {
  it('an allowed origin: 204 with the origin, the methods and headers of the API, a max-age; no credentials', async () => {
    for (const [path, method] of [
      ['/whoami', 'GET'],
      ['/oauth2/token', 'POST'],
      ['', 'GET'],
      ['/configuration', 'PATCH'],
      ['/oauth2/revoke', 'POST'],
      ['/tokens', 'DELETE'],
      ['/no/such/path', 'GET'],
    ] as const) {
      const response = await preflight(
        `${server.appUrl}${path}`,
        PAGE,
        method,
        'authorization,content-type,x-kii-appid,x-kii-appkey,x-kii-sdk,x-request-id',
      );
      assert.equal(response.status, 204, `${path}: ${response.status} ${response.text}`);
      assert.equal(response.text, '');
      assertReadableBy(response, PAGE);
      assert.equal(response.headers.get('access-control-allow-methods'), 'GET, HEAD, POST, PUT, PATCH, DELETE');
      assert.equal(
        response.headers.get('access-control-allow-headers'),
        'Authorization, Content-Type, X-Kii-AppID, X-Kii-AppKey, X-Kii-SDK, X-Request-Id, X-Tessera-Attestation, traceparent, tracestate',
      );
      assert.equal(response.headers.get('access-control-max-age'), '7200');
    }
  });

  it('an origin under an allowed wildcard is answered too', async () => {
    for (const origin of ['https://a.example.org', 'https://a.b.example.org']) {
      const response = await preflight(`${server.appUrl}/whoami`, origin);
      assert.equal(response.status, 204);
      assertReadableBy(response, origin);
    }
  });

  it('an origin the app does not list: 403 ORIGIN_NOT_ALLOWED, without CORS headers', async () => {
    for (const origin of [OTHER_PAGE, 'http://app.example.com', 'https://app.example.com:8443', 'https://example.org', 'null']) {
      const response = await preflight(`${server.appUrl}/whoami`, origin);
      assertError(response, 403, 'ORIGIN_NOT_ALLOWED');
      assertNoCors(response);
    }
    const token = await preflight(`${server.appUrl}/oauth2/token`, OTHER_PAGE, 'POST');
    assertError(token, 403, 'ORIGIN_NOT_ALLOWED');
  });

  it('an app with no allowedOrigins refuses every preflight; an unknown app is 404', async () => {
    const closed = await createConfiguredApp(server, {});
    assertError(await preflight(`${closed.appUrl}/whoami`, PAGE), 403, 'ORIGIN_NOT_ALLOWED');
    const unknown = await preflight(`${server.baseUrl}/api/apps/noSuchApp0000000/whoami`, PAGE);
    assertError(unknown, 404, 'APP_NOT_FOUND');
    assertNoCors(unknown);
  });

  it('OPTIONS that is not a preflight (no Access-Control-Request-Method, or no Origin) is served as before', async () => {
    const noRequestMethod = await from(PAGE, `${server.appUrl}/whoami`, { method: 'OPTIONS' });
    assertError(noRequestMethod, 401, 'UNAUTHORIZED');
    assertReadableBy(noRequestMethod, PAGE);
    const authenticated = await from(PAGE, `${server.appUrl}/whoami`, {
      method: 'OPTIONS',
      headers: { authorization: basic(server.app.appId) },
    });
    assertError(authenticated, 405, 'METHOD_NOT_ALLOWED');
    assertReadableBy(authenticated, PAGE);
    const noOrigin = await request(`${server.appUrl}/whoami`, { method: 'OPTIONS', headers: { 'access-control-request-method': 'GET' } });
    assertError(noOrigin, 401, 'UNAUTHORIZED');
    assertNoCors(noOrigin);
    const tokenPath = await request(`${server.appUrl}/oauth2/token`, { method: 'OPTIONS' });
    assertError(tokenPath, 405, 'METHOD_NOT_ALLOWED');
    assertNoCors(tokenPath);
  });
});

describe('answers to an allowed origin carry what a browser needs to read them, errors included', () => {
  it('token (anonymous), whoami, the app, configuration: 200', async () => {
    const anonymous = await requestToken(server, anonymousFields(server), { origin: PAGE });
    assert.equal(anonymous.status, 200, anonymous.text);
    assertReadableBy(anonymous, PAGE);
    for (const [url, authorization] of [
      [`${server.appUrl}/whoami`, bearer(anonymous.body.access_token)],
      [`${server.appUrl}/whoami`, basic(server.app.appId)],
      [server.appUrl, bearer(admin)],
      [`${server.appUrl}/configuration`, bearer(admin)],
    ] as const) {
      const response = await from(PAGE, url, { headers: { authorization } });
      assert.equal(response.status, 200, response.text);
      assertReadableBy(response, PAGE);
    }
  });

  it('401 (with its WWW-Authenticate), 403, 404, 405, 400, 415', async () => {
    const unauthorized = await from(PAGE, `${server.appUrl}/whoami`);
    assertError(unauthorized, 401, 'UNAUTHORIZED');
    assert.ok(unauthorized.headers.get('www-authenticate'));
    assertReadableBy(unauthorized, PAGE);
    const invalidToken = await from(PAGE, `${server.appUrl}/whoami`, { headers: { authorization: bearer('x'.repeat(43)) } });
    assertError(invalidToken, 401, 'INVALID_TOKEN');
    assertReadableBy(invalidToken, PAGE);
    // A token request with an Authorization header that is not Basic.
    const invalidClient = await requestToken(server, anonymousFields(server), { origin: PAGE, authorization: bearer('x'.repeat(43)) });
    assertError(invalidClient, 401, 'invalid_client');
    assertReadableBy(invalidClient, PAGE);
    const adminRequired = await from(PAGE, server.appUrl, { headers: { authorization: basic(server.app.appId) } });
    assertError(adminRequired, 403, 'ADMIN_REQUIRED');
    assertReadableBy(adminRequired, PAGE);
    const notFound = await from(PAGE, `${server.appUrl}/no/such/path`, { headers: { authorization: basic(server.app.appId) } });
    assertError(notFound, 404, 'NOT_FOUND');
    assertReadableBy(notFound, PAGE);
    const wrongMethod = await from(PAGE, `${server.appUrl}/whoami`, {
      method: 'DELETE',
      headers: { authorization: basic(server.app.appId) },
    });
    assertError(wrongMethod, 405, 'METHOD_NOT_ALLOWED');
    assertReadableBy(wrongMethod, PAGE);
    const badRequest = await requestToken(server, { grant_type: 'password' }, { origin: PAGE });
    assertError(badRequest, 400, 'unsupported_grant_type');
    assertReadableBy(badRequest, PAGE);
    const unsupported = await from(PAGE, `${server.appUrl}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml' },
      body: '<x/>',
    });
    assertError(unsupported, 415, 'UNSUPPORTED_MEDIA_TYPE');
    assertReadableBy(unsupported, PAGE);
  });

  it('429 with a readable Retry-After', async () => {
    let response: JsonResponse | undefined;
    for (let i = 0; i < 3; i++) response = await requestToken(limited, anonymousFields(limited), { origin: PAGE });
    assertError(response!, 429, 'TOO_MANY_REQUESTS');
    assert.match(response!.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assertReadableBy(response!, PAGE);
  });

  it('an origin the app does not list is answered as before, with nothing that lets a page read it', async () => {
    const token = await requestToken(server, anonymousFields(server), { origin: OTHER_PAGE });
    assert.equal(token.status, 200, 'served: the page cannot read it, and a server could have asked anyway');
    assertNoCors(token);
    const unauthorized = await from(OTHER_PAGE, `${server.appUrl}/whoami`);
    assertError(unauthorized, 401, 'UNAUTHORIZED');
    assertNoCors(unauthorized);
    const wildcardDomainItself = await from('https://example.org', `${server.appUrl}/whoami`);
    assertNoCors(wildcardDomainItself);
  });

  it('an origin removed from the list can no longer read the answers, at once', async () => {
    const app = await createConfiguredApp(server, { allowedOrigins: ['https://gone.example.com'] });
    assertReadableBy(await from('https://gone.example.com', `${app.appUrl}/whoami`), 'https://gone.example.com');
    await server.tessera.apps.configure(app.appId, { allowedOrigins: [] }, OPERATOR);
    assertNoCors(await from('https://gone.example.com', `${app.appUrl}/whoami`));
  });

  it('a request without Origin (a server) gets no CORS header at all, and no Vary', async () => {
    for (const response of [
      await requestToken(server, anonymousFields(server)),
      await requestAs(`${server.appUrl}/whoami`),
      await requestAs(`${server.appUrl}/whoami`, basic(server.app.appId)),
      await request(`${server.baseUrl}/api/forward-auth`, { headers: { 'x-original-uri': `/api/apps/${server.app.appId}/x` } }),
    ]) {
      assertNoCors(response);
      assert.equal(response.headers.get('vary'), null);
    }
  });

  it("paths that are not an app's get no CORS header, whatever the origin", async () => {
    for (const path of ['/healthz', '/readyz', '/openapi.json']) {
      assertNoCors(await from(PAGE, `${server.baseUrl}${path}`));
    }
    const health = await preflight(`${server.baseUrl}/healthz`, PAGE);
    assertError(health, 405, 'METHOD_NOT_ALLOWED');
    assertNoCors(health);
    const nowhere = await preflight(`${server.baseUrl}/nowhere`, PAGE);
    assertError(nowhere, 404, 'NOT_FOUND');
    assertNoCors(nowhere);
  });
});

describe("a page's request id: X-Request-Id, sent by the page and read back", () => {
  it('preflights allow a page to send it, on every path of an app and on the SDK token path', async () => {
    for (const [url, method, headers] of [
      [`${server.appUrl}/whoami`, 'GET', 'x-request-id'],
      [`${server.appUrl}/oauth2/token`, 'POST', 'content-type,x-request-id'],
      [`${server.appUrl}/no/such/path`, 'GET', 'authorization,x-request-id'],
      [`${server.baseUrl}/api/oauth2/token`, 'POST', 'content-type,x-kii-appid,x-kii-appkey,x-request-id'],
    ] as const) {
      const response = await preflight(url, PAGE, method, headers);
      assert.equal(response.status, 204, `${url}: ${response.text}`);
      assert.match(response.headers.get('access-control-allow-headers') ?? '', /(^|, )X-Request-Id(,|$)/, url);
      assertReadableBy(response, PAGE);
    }
  });

  it('the id a page sends is echoed on answers it can read, a token and errors alike; one the server would not take is replaced', async () => {
    const token = await requestToken(server, anonymousFields(server), { origin: PAGE, 'x-request-id': 'page-token-1' });
    assert.equal(token.status, 200, token.text);
    assertReadableBy(token, PAGE);
    assert.equal(token.headers.get('x-request-id'), 'page-token-1');
    const unauthorized = await from(PAGE, `${server.appUrl}/whoami`, { headers: { 'x-request-id': 'page-401' } });
    assertError(unauthorized, 401, 'UNAUTHORIZED');
    assertReadableBy(unauthorized, PAGE);
    assert.equal(unauthorized.headers.get('x-request-id'), 'page-401');
    const refused = await requestToken(server, adminFields(server), { origin: PAGE, 'x-request-id': 'page-admin-400' });
    assertError(refused, 400, 'unauthorized_client');
    assertReadableBy(refused, PAGE);
    assert.equal(refused.headers.get('x-request-id'), 'page-admin-400');
    const unsafe = await from(PAGE, `${server.appUrl}/whoami`, {
      headers: { authorization: basic(server.app.appId), 'x-request-id': '<script>' },
    });
    assert.equal(unsafe.status, 200);
    assertReadableBy(unsafe, PAGE);
    assert.match(unsafe.headers.get('x-request-id') ?? '', /^[0-9a-f]{16}-[0-9a-z]+$/, 'a made id, never the one sent');
  });

  it('an origin the app does not list still gets the id, and nothing that lets a page read it', async () => {
    const response = await from(OTHER_PAGE, `${server.appUrl}/whoami`, { headers: { 'x-request-id': 'other-1' } });
    assert.equal(response.headers.get('x-request-id'), 'other-1');
    assertNoCors(response);
  });
});

describe('the portal is not an API for other origins: its pages get no CORS header', () => {
  it("GET and OPTIONS of an app's portal pages and of the others, from an origin the app lists, signed in or not; the API paths still answer it", async () => {
    await createDeveloper(server, 'cors-owner@example.com');
    const owned = await server.tessera.ownedApps.create('Shop', 'cors-owner@example.com', OPERATOR);
    await server.tessera.apps.configure(owned.appId, { allowedOrigins: ['https://shop.example.com'] }, OPERATOR);
    const shop = 'https://shop.example.com';
    const signedIn = await signInOverHttp(server, 'cors-owner@example.com');
    const pages = ['', '/settings', '/events', '/events/live', '/people', '/rotate-secret', '/no/such/page'].map(
      (path) => `/portal/apps/${owned.appId}${path}`,
    );
    for (const path of [...pages, '/portal/', '/portal/sign-in', '/portal/apps/new', '/portal/account', '/portal/assets/portal.css']) {
      for (const response of [
        await from(shop, `${server.baseUrl}${path}`),
        await preflight(`${server.baseUrl}${path}`, shop),
        await preflight(`${server.baseUrl}${path}`, shop, 'POST', 'content-type'),
        await signedIn.send(path, { headers: { origin: shop } }),
        await signedIn.send(path, { method: 'OPTIONS', headers: { origin: shop, 'access-control-request-method': 'GET' } }),
      ]) {
        for (const name of CORS_HEADERS) assert.equal(response.headers.get(name), null, `${name} on ${path}: ${response.status}`);
      }
    }
    assert.equal((await signedIn.send(pages[0]!, { headers: { origin: shop } })).status, 200, 'the page itself is served');
    const api = await from(shop, `${server.baseUrl}/api/apps/${owned.appId}/whoami`, { headers: { authorization: basic(owned.appId) } });
    assert.equal(api.status, 200);
    assertReadableBy(api, shop);
    const apiPreflight = await preflight(`${server.baseUrl}/api/apps/${owned.appId}/whoami`, shop);
    assert.equal(apiPreflight.status, 204);
    assertReadableBy(apiPreflight, shop);
  });
});

describe('the SDK token path (/api/oauth2/token): the app is in X-Kii-AppID', () => {
  const sdkRequest = (origin: string, appId: string, fields: Record<string, unknown>) =>
    from(origin, `${server.baseUrl}/api/oauth2/token?disable_cache=1`, {
      method: 'POST',
      headers: { 'x-kii-appid': appId, 'x-kii-appkey': 'whatever', 'content-type': 'application/vnd.kii.OauthTokenRequest+json' },
      body: JSON.stringify(fields),
    });

  it('its preflight cannot name the app: it is answered for any origin', async () => {
    for (const origin of [PAGE, OTHER_PAGE]) {
      const response = await preflight(
        `${server.baseUrl}/api/oauth2/token`,
        origin,
        'POST',
        'content-type,x-kii-appid,x-kii-appkey,x-kii-sdk',
      );
      assert.equal(response.status, 204, response.text);
      assertReadableBy(response, origin);
    }
  });

  it('its answers are readable only by the origins of the app it names', async () => {
    const fields = { client_id: server.app.appId, client_secret: server.app.appKey };
    const allowed = await sdkRequest(PAGE, server.app.appId, fields);
    assert.equal(allowed.status, 200, allowed.text);
    assertReadableBy(allowed, PAGE);
    assertNoCors(await sdkRequest(OTHER_PAGE, server.app.appId, fields));
    const other = await createConfiguredApp(server, {});
    assertNoCors(await sdkRequest(PAGE, other.appId, { client_id: other.appId, client_secret: other.appKey }));
    const refused = await sdkRequest(PAGE, server.app.appId, { client_id: server.app.clientId, client_secret: 'wrong' });
    assertError(refused, 400, 'unauthorized_client');
    assertReadableBy(refused, PAGE);
  });
});

describe('forward authentication passes CORS on for the rest of the backend', () => {
  const forwardAuth = (origin: string, uri: string, method = 'GET', headers: Record<string, string> = {}) =>
    from(origin, `${server.baseUrl}/api/forward-auth`, {
      method,
      headers: { 'x-original-uri': uri, 'x-original-method': method, ...headers },
    });

  it("a preflight of an app's path, for an allowed origin: 204, allowing the headers it asks for", async () => {
    const response = await forwardAuth(PAGE, `/api/apps/${server.app.appId}/objects/1`, 'OPTIONS', {
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'authorization,if-match,x-request-id',
    });
    assert.equal(response.status, 204, response.text);
    assertReadableBy(response, PAGE);
    assert.equal(response.headers.get('access-control-allow-headers'), 'authorization,if-match,x-request-id');
    assert.match(response.headers.get('vary') ?? '', /Access-Control-Request-Headers/);
    assert.equal(response.headers.get('x-tessera-app-id'), null, 'a preflight is not an authentication');
  });

  it('a preflight in the Envoy style (the original path after the prefix) is answered alike', async () => {
    const response = await from(PAGE, `${server.baseUrl}/api/forward-auth/api/apps/${server.app.appId}/objects`, {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'DELETE' },
    });
    assert.equal(response.status, 204, response.text);
    assertReadableBy(response, PAGE);
    const other = await from(OTHER_PAGE, `${server.baseUrl}/api/forward-auth/api/apps/${server.app.appId}/objects`, {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'DELETE' },
    });
    assertError(other, 403, 'ORIGIN_NOT_ALLOWED');
  });

  it("a preflight from another origin: 403 ORIGIN_NOT_ALLOWED; of a URI that is not an app's: 400", async () => {
    const preflightHeaders = { 'access-control-request-method': 'GET' };
    assertError(
      await forwardAuth(OTHER_PAGE, `/api/apps/${server.app.appId}/objects`, 'OPTIONS', preflightHeaders),
      403,
      'ORIGIN_NOT_ALLOWED',
    );
    assertError(await forwardAuth(PAGE, '/elsewhere', 'OPTIONS', preflightHeaders), 400, 'invalid_request');
    assertError(await forwardAuth(PAGE, `/api/apps/${server.app.appId}/a/../b`, 'OPTIONS', preflightHeaders), 400, 'invalid_request');
  });

  it('its answers, admitted or refused, carry the CORS headers for the proxy to pass on', async () => {
    const admitted = await forwardAuth(PAGE, `/api/apps/${server.app.appId}/objects`, 'GET', { authorization: basic(server.app.appId) });
    assert.equal(admitted.status, 200, admitted.text);
    assert.equal(admitted.headers.get('x-tessera-principal'), 'anonymous');
    assertReadableBy(admitted, PAGE);
    const refused = await forwardAuth(PAGE, `/api/apps/${server.app.appId}/objects`);
    assertError(refused, 401, 'UNAUTHORIZED');
    assertReadableBy(refused, PAGE);
    assertNoCors(await forwardAuth(OTHER_PAGE, `/api/apps/${server.app.appId}/objects`, 'GET', { authorization: basic(server.app.appId) }));
  });
});
