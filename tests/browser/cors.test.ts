import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { FETCH_PAGE, pageFetch, type PageRead } from '../helpers/fetch-page.js';
import { basic, bearer } from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

// Chromium, on a page of another origin than Tessera's, calling Tessera with fetch: what the browser
// lets the page read, for an origin the app lists and for one it does not.

let page: Page;
let otherPage: Page;

const browser = browserForSuite(async () => {
  page = await browser.openPage(FETCH_PAGE);
  otherPage = await browser.openPage(FETCH_PAGE, { origin: browser.otherOrigin });
});
/** Lets a page of the browser's origin call the server's app. */
const allowBrowserOrigin = (tessera: TestServer) =>
  tessera.tessera.apps.configure(tessera.app.appId, { allowedOrigins: [browser.origin] }, OPERATOR);
const server = serverForSuite({}, allowBrowserOrigin);
/** A server whose token endpoint allows 2 requests a minute from an address. */
const limited = serverForSuite(
  {
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 2,
      adminFailuresPerAddressPerMinute: 10,
      adminFailuresPerAppPerMinute: 100,
    },
  },
  allowBrowserOrigin,
);

/** A token request as a web app sends it: JSON, with Basic AppID (a preflight goes first), and any other headers. */
function tokenRequest(target: TestServer, clientId: string, clientSecret: string, headers: Record<string, string> = {}) {
  return {
    method: 'POST',
    headers: { authorization: basic(target.app.appId), 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  };
}

/** An id Tessera made: its process's prefix and a count (src/http/request-id.ts). */
const MADE_ID = /^[0-9a-f]{16}-[0-9a-z]+$/;

function assertRefusedByBrowser(read: PageRead): void {
  assert.match(read.refused ?? '', /^TypeError: Failed to fetch/, `the page read ${JSON.stringify(read)}`);
}

describe('a web page on an origin the app lists', () => {
  it('gets an anonymous token and calls whoami with it', async () => {
    const token = await pageFetch(page, `${server.appUrl}/oauth2/token`, tokenRequest(server, server.app.appId, server.app.appKey));
    assert.equal(token.status, 200, JSON.stringify(token));
    assert.equal(token.body.id, 'ANONYMOUS');
    const whoami = await pageFetch(page, `${server.appUrl}/whoami`, { headers: { authorization: bearer(token.body.access_token) } });
    assert.equal(whoami.status, 200, JSON.stringify(whoami));
    assert.deepEqual(whoami.body, { appId: server.app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null });
  });

  it("reads each answer's X-Request-Id, a token's and an error's, to report a problem with", async () => {
    const token = await pageFetch(page, `${server.appUrl}/oauth2/token`, tokenRequest(server, server.app.appId, server.app.appKey));
    assert.equal(token.status, 200, JSON.stringify(token));
    assert.match(token.requestId ?? '', MADE_ID, JSON.stringify(token));
    // A simple request (no preflight): the id is readable all the same.
    const unauthorized = await pageFetch(page, `${server.appUrl}/whoami`);
    assert.equal(unauthorized.status, 401);
    assert.match(unauthorized.requestId ?? '', MADE_ID, JSON.stringify(unauthorized));
    assert.notEqual(unauthorized.requestId, token.requestId);
    const notFound = await pageFetch(page, `${server.appUrl}/no/such/path`, { headers: { authorization: basic(server.app.appId) } });
    assert.equal(notFound.status, 404);
    assert.equal(notFound.body.errorCode, 'NOT_FOUND');
    assert.match(notFound.requestId ?? '', MADE_ID, JSON.stringify(notFound));
  });

  it('sends an X-Request-Id of its own (the preflight allows it) and reads it back, on a token and on errors', async () => {
    const token = await pageFetch(
      page,
      `${server.appUrl}/oauth2/token`,
      tokenRequest(server, server.app.appId, server.app.appKey, { 'x-request-id': 'web-token-1' }),
    );
    assert.equal(token.status, 200, JSON.stringify(token));
    assert.equal(token.requestId, 'web-token-1');
    const whoami = await pageFetch(page, `${server.appUrl}/whoami`, {
      headers: { authorization: bearer(token.body.access_token), 'x-request-id': 'web-whoami-1' },
    });
    assert.equal(whoami.status, 200, JSON.stringify(whoami));
    assert.equal(whoami.requestId, 'web-whoami-1');
    // Only X-Request-Id, and so a preflight that asks for it alone; then a 401 the page reads.
    const unauthorized = await pageFetch(page, `${server.appUrl}/whoami`, { headers: { 'x-request-id': 'web-401' } });
    assert.equal(unauthorized.status, 401, JSON.stringify(unauthorized));
    assert.equal(unauthorized.body.errorCode, 'UNAUTHORIZED');
    assert.equal(unauthorized.requestId, 'web-401');
    // The SDK token path, whose preflight cannot name the app.
    const sdk = await pageFetch(page, `${server.baseUrl}/api/oauth2/token`, {
      method: 'POST',
      headers: {
        'x-kii-appid': server.app.appId,
        'x-kii-appkey': server.app.appKey,
        'content-type': 'application/vnd.kii.OauthTokenRequest+json',
        'x-request-id': 'web-sdk-1',
      },
      body: JSON.stringify({ client_id: server.app.appId, client_secret: server.app.appKey }),
    });
    assert.equal(sdk.status, 200, JSON.stringify(sdk));
    assert.equal(sdk.requestId, 'web-sdk-1');
    // An id Tessera would not take (a space): the request goes on, with an id of Tessera's.
    const unsafe = await pageFetch(page, `${server.appUrl}/whoami`, {
      headers: { authorization: basic(server.app.appId), 'x-request-id': 'has space' },
    });
    assert.equal(unsafe.status, 200, JSON.stringify(unsafe));
    assert.match(unsafe.requestId ?? '', MADE_ID);
  });

  it('sends W3C Trace Context headers, as a page traced with OpenTelemetry does (the preflight allows them); the trace id is the request id', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traced = await pageFetch(page, `${server.appUrl}/whoami`, {
      headers: { authorization: basic(server.app.appId), traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: 'web=1' },
    });
    assert.equal(traced.status, 200, JSON.stringify(traced));
    assert.equal(traced.requestId, traceId);
  });

  it('reads a 401 and its WWW-Authenticate', async () => {
    const unauthorized = await pageFetch(page, `${server.appUrl}/whoami`);
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.body.errorCode, 'UNAUTHORIZED');
    assert.equal(unauthorized.wwwAuthenticate, 'Basic realm="tessera", Bearer realm="tessera"');
    const invalidToken = await pageFetch(page, `${server.appUrl}/whoami`, { headers: { authorization: bearer('A'.repeat(43)) } });
    assert.equal(invalidToken.status, 401);
    assert.equal(invalidToken.body.errorCode, 'INVALID_TOKEN');
    assert.equal(invalidToken.wwwAuthenticate, 'Bearer error="invalid_token"');
  });

  it('reads a 429 and its Retry-After', async () => {
    const reads: PageRead[] = [];
    for (let i = 0; i < 3; i++) {
      reads.push(await pageFetch(page, `${limited.appUrl}/oauth2/token`, tokenRequest(limited, limited.app.appId, limited.app.appKey)));
    }
    assert.deepEqual(
      reads.map((read) => read.status),
      [200, 200, 429],
    );
    assert.equal(reads[2]!.body.errorCode, 'TOO_MANY_REQUESTS');
    assert.match(reads[2]!.retryAfter ?? '', /^[1-9][0-9]*$/);
    assert.match(reads[2]!.requestId ?? '', MADE_ID);
  });

  it('is refused an admin token, 400 unauthorized_client, which it can read; the operator learns that the secret leaked', async () => {
    const refused = await pageFetch(
      page,
      `${server.appUrl}/oauth2/token`,
      tokenRequest(server, server.app.clientId, server.app.clientSecret, { 'x-request-id': 'web-admin-1' }),
    );
    assert.equal(refused.status, 400);
    assert.equal(refused.body.errorCode, 'unauthorized_client');
    assert.equal(refused.requestId, 'web-admin-1');
    assert.match(refused.body.message, /server-side code/);
    await server.tessera.events.flush();
    const exposed = await server.tessera.events.list(server.app.appId, { type: 'app.secret_exposed', limit: 10 });
    assert.deepEqual(
      exposed.events.map((event) => event.details),
      [{ secret: 'current', origin: browser.origin }],
    );
  });
});

describe('a web page on an origin the app does not list', () => {
  it('cannot read any answer: fetch rejects, for a simple request and for one with a preflight', async () => {
    assertRefusedByBrowser(await pageFetch(otherPage, `${server.appUrl}/whoami`));
    assertRefusedByBrowser(await pageFetch(otherPage, `${server.appUrl}/whoami`, { headers: { 'x-request-id': 'other-1' } }));
    assertRefusedByBrowser(await pageFetch(otherPage, `${server.appUrl}/whoami`, { headers: { authorization: basic(server.app.appId) } }));
    assertRefusedByBrowser(
      await pageFetch(otherPage, `${server.appUrl}/oauth2/token`, tokenRequest(server, server.app.appId, server.app.appKey)),
    );
  });

  it('never sends a request that needs a preflight: the ClientSecret it holds does not even reach the server', async () => {
    const before = await server.tessera.events.list(server.app.appId, { type: 'app.secret_exposed', limit: 10 });
    assertRefusedByBrowser(
      await pageFetch(otherPage, `${server.appUrl}/oauth2/token`, tokenRequest(server, server.app.clientId, server.app.clientSecret)),
    );
    await server.tessera.events.flush();
    const after = await server.tessera.events.list(server.app.appId, { type: 'app.secret_exposed', limit: 10 });
    assert.equal(after.events.length, before.events.length, 'the browser sent the request after a refused preflight');
  });
});
