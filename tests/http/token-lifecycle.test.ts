import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertError } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminFields,
  adminTokenOf,
  anonymousFields,
  anonymousTokenOf,
  basic,
  bearer,
  introspectToken,
  postAs,
  request,
  requestAs,
  requestToken,
  revokeToken,
  tokenWorks,
  whoami,
} from '../helpers/http.js';
import { rawRequest } from '../helpers/raw-http.js';
import { serverForSuite } from '../helpers/server.js';

const server = serverForSuite();

describe('POST /api/apps/{appId}/oauth2/revoke (RFC 7009)', () => {
  it('lets a token revoke itself (JSON or form); it is refused at once with 401 INVALID_TOKEN', async () => {
    for (const type of ['json', 'form'] as const) {
      for (const token of [await anonymousTokenOf(server), await adminTokenOf(server)]) {
        assert.equal((await whoami(server.appUrl, bearer(token))).status, 200);
        const response = await revokeToken(server.appUrl, token, bearer(token), type);
        assert.equal(response.status, 200, response.text);
        assert.equal(response.headers.get('cache-control'), 'no-store');
        // A JSON answer, an empty object: client libraries parse it (simple-oauth2 fails on an untyped empty body).
        assert.match(response.headers.get('content-type') ?? '', /^application\/json(;|$)/);
        assert.equal(response.text, '{}');
        assertError(await whoami(server.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
      }
    }
  });

  it('lets an admin token revoke any token of its app', async () => {
    const admin = await adminTokenOf(server);
    for (const token of [await anonymousTokenOf(server), await adminTokenOf(server)]) {
      assert.equal((await whoami(server.appUrl, bearer(token))).status, 200); // cached now: the revocation must still win
      assert.equal((await revokeToken(server.appUrl, token, bearer(admin))).status, 200);
      assertError(await whoami(server.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
    }
    assert.equal((await whoami(server.appUrl, bearer(admin))).status, 200);
  });

  it("answers 200 for an unknown, malformed, already revoked or other app's token, and changes nothing", async () => {
    const admin = await adminTokenOf(server);
    const other = await createConfiguredApp(server, {});
    const otherResponse = await requestToken(other, anonymousFields(other));
    const otherToken = otherResponse.body.access_token as string;
    const revoked = await anonymousTokenOf(server);
    await revokeToken(server.appUrl, revoked, bearer(admin));
    for (const token of ['x', 'A'.repeat(43), revoked, otherToken, 'not a token at all!']) {
      const response = await revokeToken(server.appUrl, token, bearer(admin));
      assert.equal(response.status, 200, `${token}: ${response.text}`);
    }
    const otherWhoami = await whoami(other.appUrl, bearer(otherToken));
    assert.equal(otherWhoami.status, 200, 'a token of another app is not revoked through this one');
  });

  it('lets a non-admin caller of the app revoke an anonymous token it names, never an admin token: 403 ADMIN_REQUIRED', async () => {
    const caller = await anonymousTokenOf(server);
    const admin = await adminTokenOf(server);
    for (const authorization of [bearer(caller), basic(server.app.appId)]) {
      const held = await anonymousTokenOf(server);
      const response = await revokeToken(server.appUrl, held, authorization);
      assert.equal(response.status, 200, response.text);
      assertError(await whoami(server.appUrl, bearer(held)), 401, 'INVALID_TOKEN');
      assertError(await revokeToken(server.appUrl, admin, authorization), 403, 'ADMIN_REQUIRED');
      assert.equal(
        (await revokeToken(server.appUrl, 'unknown', authorization)).status,
        200,
        'an unknown token is not an error (RFC 7009 §2.2)',
      );
    }
    assert.equal((await whoami(server.appUrl, bearer(caller))).status, 200);
    assert.equal((await whoami(server.appUrl, bearer(admin))).status, 200);
  });

  it('needs the token parameter, and authentication', async () => {
    const admin = await adminTokenOf(server);
    assertError(await postAs(`${server.appUrl}/oauth2/revoke`, bearer(admin), {}), 400, 'invalid_request');
    assertError(await postAs(`${server.appUrl}/oauth2/revoke`, bearer(admin), { token: 5 }), 400, 'invalid_request');
    assertError(await postAs(`${server.appUrl}/oauth2/revoke`, bearer(admin), { token: '' }), 400, 'invalid_request');
    assertError(await postAs(`${server.appUrl}/oauth2/revoke`, bearer(admin), 'token=a&token=b', 'json'), 400, 'invalid_request');
    const noAuth = await request(`${server.appUrl}/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token":"x"}',
    });
    assertError(noAuth, 401, 'UNAUTHORIZED');
    assertError(await revokeToken(server.appUrl, 'x', bearer('bogus')), 401, 'INVALID_TOKEN');
    const get = await requestAs(`${server.appUrl}/oauth2/revoke`, bearer(admin));
    assertError(get, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(get.headers.get('allow'), 'POST');
  });
});

describe('POST /api/apps/{appId}/oauth2/introspect (RFC 7662)', () => {
  it('describes an active admin or anonymous token to an admin caller', async () => {
    const admin = await adminTokenOf(server);
    const before = Math.floor(Date.now() / 1000);
    const expiresAt = Date.now() + 3_600_000;
    const anonymous = await anonymousTokenOf(server, { expiresAt });
    const response = await introspectToken(server.appUrl, anonymous, bearer(admin), 'form');
    assert.equal(response.status, 200, response.text);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const { iat, ...rest } = response.body;
    assert.deepEqual(rest, {
      active: true,
      token_type: 'bearer',
      principal: 'anonymous',
      id: 'ANONYMOUS',
      sub: 'ANONYMOUS',
      client_id: server.app.appId,
      app_id: server.app.appId,
      exp: Math.floor(expiresAt / 1000),
    });
    assert.ok(iat >= before && iat <= Math.ceil(Date.now() / 1000), `iat ${iat}`);

    const self = await introspectToken(server.appUrl, admin, bearer(admin));
    assert.equal(self.body.active, true);
    assert.equal(self.body.principal, 'admin');
    assert.equal(self.body.id, server.app.adminId);
    assert.equal(self.body.client_id, server.app.clientId);
    assert.equal('exp' in self.body, false, 'a token that never expires has no exp');
  });

  it('answers exactly {"active": false} for anything not valid', async () => {
    const admin = await adminTokenOf(server);
    const revoked = await anonymousTokenOf(server);
    await revokeToken(server.appUrl, revoked, bearer(revoked));
    const other = await createConfiguredApp(server, {});
    const otherToken = (await requestToken(other, anonymousFields(other, { client_secret: 'x' }))).body.access_token as string;
    const tampered = admin.slice(0, -2) + (admin.at(-2) === 'A' ? 'B' : 'A') + admin.at(-1);
    for (const token of [revoked, otherToken, tampered, 'garbage', 'A'.repeat(43)]) {
      const response = await introspectToken(server.appUrl, token, bearer(admin));
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, { active: false }, token);
    }
  });

  it('answers an expired token as inactive', async () => {
    const admin = await adminTokenOf(server);
    const token = await anonymousTokenOf(server, { expiresAt: Date.now() + 300 });
    assert.equal((await introspectToken(server.appUrl, token, bearer(admin))).body.active, true);
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.deepEqual((await introspectToken(server.appUrl, token, bearer(admin))).body, { active: false });
  });

  it('is an admin feature: 403 ADMIN_REQUIRED for anonymous callers, and it needs the token parameter', async () => {
    const anonymous = await anonymousTokenOf(server);
    assertError(await introspectToken(server.appUrl, anonymous, bearer(anonymous)), 403, 'ADMIN_REQUIRED');
    assertError(await introspectToken(server.appUrl, anonymous, basic(server.app.appId)), 403, 'ADMIN_REQUIRED');
    assertError(await postAs(`${server.appUrl}/oauth2/introspect`, bearer(await adminTokenOf(server)), {}), 400, 'invalid_request');
  });
});

describe('revocation and introspection answers are never cached', () => {
  it('marks every answer no-store, including 401 from authentication, 403, 400 and 405', async () => {
    const anonymous = await anonymousTokenOf(server);
    for (const path of ['/oauth2/revoke', '/oauth2/introspect']) {
      const answers = [
        await postAs(`${server.appUrl}${path}`, bearer('bogus'), { token: 'x' }),
        await request(`${server.appUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"token":"x"}',
        }),
        await postAs(`${server.appUrl}${path}`, bearer(await adminTokenOf(server)), {}),
        await requestAs(`${server.appUrl}${path}`, bearer(anonymous)),
      ];
      if (path === '/oauth2/introspect') answers.push(await postAs(`${server.appUrl}${path}`, bearer(anonymous), { token: anonymous }));
      assert.deepEqual(
        answers.map((answer) => `${answer.status} ${answer.headers.get('cache-control')} ${answer.headers.get('pragma')}`),
        [
          '401 no-store no-cache',
          '401 no-store no-cache',
          '400 no-store no-cache',
          '405 no-store no-cache',
          ...(path === '/oauth2/introspect' ? ['403 no-store no-cache'] : []),
        ],
        path,
      );
    }
  });
});

/**
 * A revoke-all's answer: the stored tokens removed, for anonymous tokens the cut-off, an instant of
 * the last few seconds, and what happened in words.
 */
function assertAppRevocation(body: unknown, expected: { appId: string; kind: string; revoked: number }): void {
  const { anonymousCutoff, message, ...rest } = body as { anonymousCutoff?: string; message?: string };
  assert.deepEqual(rest, expected);
  assert.equal(typeof message, 'string');
  if (expected.kind === 'admin') return assert.equal(anonymousCutoff, undefined);
  assert.equal(typeof anonymousCutoff, 'string');
  const age = Date.now() - Date.parse(anonymousCutoff!);
  assert.ok(age >= 0 && age < 10_000, `anonymousCutoff ${anonymousCutoff} is the time of the revocation`);
}

describe('DELETE /api/apps/{appId}/tokens', () => {
  it('revokes every token of one kind, then all; an admin token is needed', async () => {
    const fresh = await createConfiguredApp(server, {});
    const tokenOf = async (fields: Record<string, unknown>) => (await requestToken(fresh, fields)).body.access_token as string;
    const adminOf = () => tokenOf(adminFields(fresh));
    const anonymousOf = () => tokenOf(anonymousFields(fresh));

    const anonymous = [await anonymousOf(), await anonymousOf()];
    const admins = [await adminOf(), await adminOf()];
    for (const token of [...anonymous, ...admins]) assert.ok(await tokenWorks(fresh.appUrl, token));

    const refused = await requestAs(`${fresh.appUrl}/tokens?kind=anonymous`, bearer(anonymous[0]!), 'DELETE');
    assertError(refused, 403, 'ADMIN_REQUIRED');

    const byKind = await requestAs(`${fresh.appUrl}/tokens?kind=anonymous`, bearer(admins[0]!), 'DELETE');
    assert.equal(byKind.status, 200, byKind.text);
    // Anonymous tokens are self-verifying: none is stored, all are ended by the app's cut-off.
    assertAppRevocation(byKind.body, { appId: fresh.appId, kind: 'anonymous', revoked: 0 });
    for (const token of anonymous) assert.equal(await tokenWorks(fresh.appUrl, token), false);
    for (const token of admins) assert.equal(await tokenWorks(fresh.appUrl, token), true);

    const all = await requestAs(`${fresh.appUrl}/tokens?kind=all`, bearer(admins[0]!), 'DELETE');
    assertAppRevocation(all.body, { appId: fresh.appId, kind: 'all', revoked: 2 });
    for (const token of admins) assert.equal(await tokenWorks(fresh.appUrl, token), false);
    assert.ok(await tokenWorks(fresh.appUrl, await anonymousOf()), 'new tokens work after a revocation');
  });

  it('says what a revoke-all did in words: every anonymous token issued up to the cut-off is refused, however many (none is stored)', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Cut off');
    const admin = await adminTokenOf(fresh);
    const before = [await anonymousTokenOf(fresh), await anonymousTokenOf(fresh)];

    const anonymous = await requestAs(`${fresh.appUrl}/tokens?kind=anonymous`, bearer(admin), 'DELETE');
    assert.equal(anonymous.status, 200, anonymous.text);
    const cutoff = anonymous.body.anonymousCutoff as string;
    assert.equal(anonymous.body.revoked, 0);
    assert.equal(anonymous.body.message, `Every anonymous token of app ${fresh.appId} issued up to ${cutoff} is refused from now on.`);
    for (const token of before) assert.equal((await whoami(fresh.appUrl, bearer(token))).status, 401);

    const admins = await requestAs(`${fresh.appUrl}/tokens?kind=admin`, bearer(admin), 'DELETE');
    assert.equal(admins.body.message, `Every admin token of app ${fresh.appId} is refused from now on (1 revoked).`);
    const again = await adminTokenOf(fresh);
    const all = await requestAs(`${fresh.appUrl}/tokens?kind=all`, bearer(again), 'DELETE');
    assert.equal(
      all.body.message,
      `Every admin token of app ${fresh.appId}, and every anonymous token issued up to ${all.body.anonymousCutoff}, is refused from now on.`,
    );

    // The event says the same: the cut-off (UNIX ms), beside the count of stored tokens.
    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(fresh.appId, { type: 'token.revoked', limit: 10 });
    assert.deepEqual(
      events.map((event) => event.details),
      [
        { kind: 'all', scope: 'app', count: 1, anonymousCutoff: Date.parse(all.body.anonymousCutoff) },
        { kind: 'admin', scope: 'app', count: 1 },
        { kind: 'anonymous', scope: 'app', count: 0, anonymousCutoff: Date.parse(cutoff) },
      ],
    );
  });

  it('refuses an unknown kind with 400 invalid_request', async () => {
    const admin = await adminTokenOf(server);
    for (const kind of ['user', 'ADMIN', 'admin&kind=anonymous', '']) {
      const response = await requestAs(`${server.appUrl}/tokens?kind=${kind}`, bearer(admin), 'DELETE');
      assertError(response, 400, 'invalid_request');
    }
    assert.equal((await whoami(server.appUrl, bearer(admin))).status, 200);
  });

  // Issue 11, finding 4: each of these used to answer {"kind":"all"} and revoke every token.
  it('refuses a missing, misspelt, repeated or bracketed kind, any other parameter and any body with 400, revoking nothing', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Typos');
    const admin = await adminTokenOf(fresh);
    const tokens = [admin, await adminTokenOf(fresh), await anonymousTokenOf(fresh), await anonymousTokenOf(fresh)];
    const json = { authorization: bearer(admin), 'content-type': 'application/json' };
    const attempts: { query: string; headers?: Record<string, string>; body?: string }[] = [
      { query: '' },
      { query: '?KIND=admin' },
      { query: '?Kind=anonymous' },
      { query: '?knd=admin' },
      { query: '?kind[]=admin' },
      { query: '?kind%5B%5D=admin' },
      { query: '?kind[0]=admin' },
      { query: '?kind=admin&kind=admin' },
      { query: '?kind=all&kind=admin' },
      { query: '?kind=admin&dryRun=true' },
      { query: '?=admin' },
      { query: '?kind' },
      { query: '?kind=all%20' },
      { query: '?kind=%20all' },
      { query: '?kind=All' },
      { query: '', headers: json, body: '{"kind":"admin"}' },
      { query: '?kind=admin', headers: json, body: '{"kind":"admin"}' },
      { query: '?kind=anonymous', headers: json, body: '{}' },
      { query: '', headers: { authorization: bearer(admin), 'content-type': 'application/x-www-form-urlencoded' }, body: 'kind=admin' },
      { query: '?kind=anonymous', headers: { authorization: bearer(admin), 'content-type': 'text/plain' }, body: ' ' },
      { query: '?kind=anonymous', headers: { authorization: bearer(admin) }, body: 'kind=admin' },
    ];
    const sends = attempts.map((attempt) => ({
      what: JSON.stringify(attempt),
      send: () =>
        request(`${fresh.appUrl}/tokens${attempt.query}`, {
          method: 'DELETE',
          headers: attempt.headers ?? { authorization: bearer(admin) },
          ...(attempt.body === undefined ? {} : { body: attempt.body }),
        }),
    }));
    // fetch labels every body it sends; a body with no Content-Type at all takes raw HTTP.
    sends.push({
      what: 'a body without Content-Type',
      send: async () => {
        const path = `${new URL(fresh.appUrl).pathname}/tokens?kind=anonymous`;
        const response = await rawRequest(server.baseUrl, {
          method: 'DELETE',
          path,
          headers: { authorization: bearer(admin) },
          body: 'kind=admin',
        });
        assert.ok(response !== null, 'no answer');
        return response;
      },
    });
    for (const { what, send } of sends) {
      const response = await send();
      assert.equal(response.status, 400, `${what}: ${response.status} ${response.text}`);
      assertError(response, 400, 'invalid_request');
      for (const token of tokens) {
        assert.equal((await whoami(fresh.appUrl, bearer(token))).status, 200, `${what} revoked a token`);
      }
    }
    const revoked = await server.tessera.events.list(fresh.appId, { type: 'token.revoked', limit: 50 });
    assert.deepEqual(revoked.events, [], 'a refused revoke-all was recorded');

    // An empty body labelled JSON, as many clients send with a DELETE, is no body.
    const emptyJson = await request(`${fresh.appUrl}/tokens?kind=anonymous`, { method: 'DELETE', headers: json, body: '' });
    assert.equal(emptyJson.status, 200, emptyJson.text);
    assertAppRevocation(emptyJson.body, { appId: fresh.appId, kind: 'anonymous', revoked: 0 });
    const statuses = await Promise.all(tokens.map(async (token) => (await whoami(fresh.appUrl, bearer(token))).status));
    assert.deepEqual(statuses, [200, 200, 401, 401]);
  });
});
