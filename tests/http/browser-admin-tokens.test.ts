import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminFields,
  anonymousFields,
  basic,
  bearer,
  request,
  requestAs,
  requestToken,
  type AppEndpoint,
  type JsonResponse,
} from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';

/**
 * The seed's rule 2, "The ClientID and ClientSecret must not be embedded in a client application":
 * an admin-token request from a browser (it carries `Origin`) is refused on both token paths,
 * `400 unauthorized_client`, the same whether the secret is right or wrong; a right one is recorded
 * as `app.secret_exposed`; a wrong one counts against the failed-admin limits.
 */

const PAGE = 'https://app.example.com';
const FAILURES_PER_ADDRESS = 3;

const server = serverForSuite({
  rateLimits: {
    enabled: true,
    tokenRequestsPerAddressPerMinute: 10_000,
    adminFailuresPerAddressPerMinute: FAILURES_PER_ADDRESS,
    adminFailuresPerAppPerMinute: 1_000,
  },
  trustedProxies: ['loopback'],
});

/** The four ways to ask for an admin token: JSON with Basic AppID, client_secret_basic, the SDK path in JSON and in its own type. */
function adminRequests(
  app: AppEndpoint,
  clientSecret: string,
  headers: Record<string, string> | ((index: number) => Record<string, string>),
): Promise<JsonResponse>[] {
  const headersOf = typeof headers === 'function' ? headers : () => headers;
  const sdk = (contentType: string, index: number) =>
    request(`${server.baseUrl}/api/oauth2/token?disable_cache=1`, {
      method: 'POST',
      headers: { 'x-kii-appid': app.appId, 'x-kii-appkey': app.appKey, 'content-type': contentType, ...headersOf(index) },
      body: JSON.stringify({ client_id: app.clientId, client_secret: clientSecret }),
    });
  return [
    requestToken(app, adminFields(app, { client_secret: clientSecret }), headersOf(0)),
    request(`${app.appUrl}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basic(app.clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded', ...headersOf(1) },
      body: 'grant_type=client_credentials',
    }),
    sdk('application/json', 2),
    sdk('application/vnd.kii.OauthTokenRequest+json', 3),
  ];
}

async function eventsOf(app: AppEndpoint, type: string) {
  await server.tessera.events.flush();
  return (await server.tessera.events.list(app.appId, { type: type as 'token.issued', limit: 50 })).events;
}

describe('admin-token requests that carry Origin', () => {
  it('are refused on both paths, 400 unauthorized_client saying to ask from server-side code; the right secret and a wrong one get the same bytes', async () => {
    const app = await createConfiguredApp(server, { allowedOrigins: [PAGE] });
    const right = await Promise.all(adminRequests(app, app.clientSecret, { origin: PAGE, 'x-forwarded-for': '198.51.100.1' }));
    // Each wrong one from an address of its own, below the failed-admin limit.
    const wrong = await Promise.all(
      adminRequests(app, 'f'.repeat(64), (index) => ({ origin: PAGE, 'x-forwarded-for': `198.51.100.2${index}` })),
    );
    for (const response of [...right, ...wrong]) {
      assertError(response, 400, 'unauthorized_client');
      assert.match(response.body.message, /server-side code/);
      assert.equal(response.body.access_token, undefined);
      assert.ok(!response.text.includes(app.clientSecret));
    }
    assert.deepEqual(new Set([...right, ...wrong].map((response) => response.text)).size, 1);
    for (const [index, response] of right.entries()) {
      for (const name of ['content-type', 'cache-control', 'access-control-allow-origin', 'www-authenticate']) {
        assert.equal(response.headers.get(name), wrong[index]!.headers.get(name), name);
      }
    }
  });

  it('are refused whatever the origin: listed or not, opaque (null)', async () => {
    const app = await createConfiguredApp(server, {});
    for (const origin of [PAGE, 'null', 'https://other.example']) {
      assertError(await requestToken(app, adminFields(app), { origin, 'x-forwarded-for': '198.51.100.3' }), 400, 'unauthorized_client');
    }
  });

  it('with the right secret record app.secret_exposed (the secret, the origin, the address), an audit event the admin reads', async () => {
    const app = await createConfiguredApp(server, {});
    await Promise.all(adminRequests(app, app.clientSecret, { origin: PAGE, 'x-forwarded-for': '198.51.100.4' }));
    await requestToken(app, adminFields(app), { origin: 'null', 'x-forwarded-for': '198.51.100.4' });
    await requestToken(app, adminFields(app, { client_secret: 'wrong' }), { origin: PAGE, 'x-forwarded-for': '198.51.100.5' });
    const exposed = await eventsOf(app, 'app.secret_exposed');
    assert.equal(exposed.length, 5);
    assert.deepEqual(exposed[0]!.details, { secret: 'current', origin: null });
    assert.deepEqual(exposed[1]!.details, { secret: 'current', origin: PAGE });
    assert.equal(exposed[1]!.principal, 'admin');
    assert.equal(exposed[1]!.clientAddress, '198.51.100.4');
    assert.equal((await eventsOf(app, 'token.issued')).length, 0, 'no token was issued');

    const admin = (await requestToken(app, adminFields(app), { 'x-forwarded-for': '198.51.100.6' })).body.access_token;
    const listed = await requestAs(`${app.appUrl}/events?type=app.secret_exposed&limit=1`, bearer(admin));
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.events.map((event: { type: string; details: unknown }) => [event.type, event.details]),
      [['app.secret_exposed', { secret: 'current', origin: null }]],
    );
    assert.ok(!JSON.stringify(listed.body).includes(app.clientSecret));
  });

  it('with a wrong secret record token.refused and count against the failed-admin limits: Origin is no way around them', async () => {
    const app = await createConfiguredApp(server, {});
    const address = { 'x-forwarded-for': '198.51.100.7' };
    for (let i = 0; i < FAILURES_PER_ADDRESS; i++) {
      assertError(
        await requestToken(app, adminFields(app, { client_secret: `wrong-${i}` }), { origin: PAGE, ...address }),
        400,
        'unauthorized_client',
      );
    }
    const refused = await eventsOf(app, 'token.refused');
    assert.equal(refused.length, FAILURES_PER_ADDRESS);
    assert.deepEqual(refused[0]!.details, { reason: 'invalid_client' });
    assert.equal((await eventsOf(app, 'app.secret_exposed')).length, 0);
    // Past the limit, every admin attempt from that address is 429, with Origin or without, right or wrong.
    for (const headers of [{ origin: PAGE, ...address }, address]) {
      for (const clientSecret of [app.clientSecret, 'wrong-again']) {
        const response = await requestToken(app, adminFields(app, { client_secret: clientSecret }), headers);
        assertError(response, 429, 'TOO_MANY_REQUESTS');
      }
    }
    assert.equal(
      (await requestToken(app, adminFields(app), { 'x-forwarded-for': '198.51.100.8' })).status,
      200,
      'other addresses are not affected',
    );
  });

  it('do not stop anonymous tokens: a browser gets one, with Origin, on both paths', async () => {
    const app = await createConfiguredApp(server, { allowedOrigins: [PAGE] });
    const anonymous = await requestToken(app, anonymousFields(app), { origin: PAGE });
    assert.equal(anonymous.status, 200, anonymous.text);
    assert.equal(anonymous.body.id, 'ANONYMOUS');
    const sdk = await request(`${server.baseUrl}/api/oauth2/token`, {
      method: 'POST',
      headers: { origin: PAGE, 'x-kii-appid': app.appId, 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: app.appId, client_secret: app.appKey }),
    });
    assert.equal(sdk.status, 200, sdk.text);
    await server.tessera.apps.configure(app.appId, { requireAppKey: true }, OPERATOR);
    assertError(await requestToken(app, anonymousFields(app, { client_secret: 'wrong' }), { origin: PAGE }), 401, 'invalid_client');
  });

  it('without Origin (server-side code) the admin token is issued as before', async () => {
    const app = await createConfiguredApp(server, { allowedOrigins: [PAGE] });
    const responses = await Promise.all(adminRequests(app, app.clientSecret, { 'x-forwarded-for': '198.51.100.9' }));
    for (const response of responses) {
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.id, app.adminId);
    }
  });

  it('as client authentication on revocation and introspection are refused the same way, and a right secret is recorded', async () => {
    const app = await createConfiguredApp(server, { allowedOrigins: [PAGE] });
    const anonymous = (await requestToken(app, anonymousFields(app))).body.access_token;
    // Each wrong one from an address of its own, below the failed-admin limit.
    const attempts = (clientSecret: string, addressPrefix: string) =>
      ['revoke', 'introspect'].flatMap((endpoint, index) => [
        request(`${app.appUrl}/oauth2/${endpoint}`, {
          method: 'POST',
          headers: {
            authorization: basic(app.clientId, clientSecret),
            'content-type': 'application/x-www-form-urlencoded',
            origin: PAGE,
            'x-forwarded-for': `${addressPrefix}${2 * index + 1}`,
          },
          body: `token=${anonymous}`,
        }),
        request(`${app.appUrl}/oauth2/${endpoint}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            origin: PAGE,
            'x-forwarded-for': `${addressPrefix}${2 * index + 2}`,
          },
          body: `token=${anonymous}&client_id=${app.clientId}&client_secret=${clientSecret}`,
        }),
      ]);
    const right = await Promise.all(attempts(app.clientSecret, '198.51.101.'));
    const wrong = await Promise.all(attempts('f'.repeat(64), '198.51.102.'));
    for (const response of [...right, ...wrong]) {
      assertError(response, 400, 'unauthorized_client');
      assert.match(response.body.message, /not accepted from browsers: the ClientSecret must stay in server-side code/);
      assert.equal(response.headers.get('access-control-allow-origin'), PAGE, 'the page can read why');
    }
    assert.equal(new Set([...right, ...wrong].map((response) => response.text)).size, 1);
    assert.equal((await eventsOf(app, 'app.secret_exposed')).length, right.length);
    assert.equal((await eventsOf(app, 'token.refused')).length, wrong.length);
    assert.equal((await requestAs(`${app.appUrl}/whoami`, bearer(anonymous))).status, 200, 'the token was not revoked');
  });
});
