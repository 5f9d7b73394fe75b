import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertError } from '../helpers/assert.js';
import { adminFields, anonymousFields, request, requestToken, type JsonResponse } from '../helpers/http.js';
import { portalClient } from '../helpers/portal-http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

// The portal is a plugin of its own at `/portal/` (and `/`, which sends people there); turned off,
// those paths are the API's 404; turned on, its cookies and its CSP stay on its own pages.

const withPortal = serverForSuite();
const withoutPortal = serverForSuite({ portal: false });

/** Headers whose values differ from one answer to the next whatever the server. */
const VARYING = new Set(['date', 'content-length', 'keep-alive', 'connection', 'x-request-id']);

/** An answer's headers, less those that vary from one request to the next. */
function stableHeaders(response: JsonResponse): Record<string, string> {
  return Object.fromEntries([...response.headers].filter(([name]) => !VARYING.has(name)));
}

/** The token endpoint's answers that a test compares: issued (admin, anonymous) and refused. */
function tokenAnswers(server: TestServer): Promise<JsonResponse>[] {
  return [
    requestToken(server, adminFields(server)),
    requestToken(server, anonymousFields(server)),
    requestToken(server, adminFields(server, { client_secret: 'wrong' })),
  ];
}

describe('with portal: false', () => {
  it('answers `/`, `/portal/` and the portal’s pages with the API’s 404 JSON', async () => {
    for (const path of ['/', '/portal', '/portal/', '/portal/sign-in', '/portal/assets/portal.css']) {
      const response = await request(`${withoutPortal.baseUrl}${path}`, { redirect: 'manual' });
      assertError(response, 404, 'NOT_FOUND');
      assert.equal(response.headers.get('set-cookie'), null, path);
      assert.equal(response.headers.get('content-security-policy'), null, path);
    }
    assertError(
      await request(`${withoutPortal.baseUrl}/portal/sign-in`, { method: 'POST', body: 'email=a%40example.com' }),
      404,
      'NOT_FOUND',
    );
  });
});

describe('with the portal on', () => {
  it('sends `/` to `/portal/`, and `/portal/` to the sign-in page when not signed in', async () => {
    const visitor = portalClient(withPortal);
    const root = await visitor.get('/');
    assert.equal(root.status, 302);
    assert.equal(root.location, '/portal/');
    const portal = await visitor.get('/portal/');
    assert.equal(portal.status, 303);
    assert.equal(portal.location, `/portal/sign-in?next=${encodeURIComponent('/portal/')}`);
    const signIn = await visitor.page(portal.location);
    assert.match(signIn.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok(signIn.headers.get('content-security-policy'), 'the portal’s pages have their CSP');
  });

  it('leaves the token endpoint’s answers as they are without it: no cookie, no CSP', async () => {
    const on = await Promise.all(tokenAnswers(withPortal));
    const off = await Promise.all(tokenAnswers(withoutPortal));
    assert.deepEqual(
      on.map((response) => response.status),
      [200, 200, 401],
    );
    for (const [index, response] of on.entries()) {
      assert.equal(response.headers.get('set-cookie'), null);
      assert.equal(response.headers.get('content-security-policy'), null);
      assert.deepEqual(stableHeaders(response), stableHeaders(off[index]!), `answer ${index}: the same headers with the portal as without`);
      assert.deepEqual(Object.keys(response.body).sort(), Object.keys(off[index]!.body).sort());
    }
    assertError(on[2]!, 401, 'invalid_client');
  });
});
