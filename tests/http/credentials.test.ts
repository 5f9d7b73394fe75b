import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CreatedCredential } from '../../src/apps/credential-service.js';
import { CLIENT_SECRET_PATTERN } from '../../src/apps/secret-format.js';
import { MAX_CREDENTIALS_PER_APP } from 'tessera-tokens/internal/credentials/credential.js';
import { BUILT_IN_SCOPES } from 'tessera-tokens/internal/credentials/scopes.js';
import { OPERATOR } from '../../src/request-context.js';
import { openStore } from '../../src/store/open.js';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminTokenOf,
  bearer,
  basic,
  formBody,
  introspectToken,
  postAs,
  request,
  requestAs,
  requestToken,
  revokeToken,
  whoami,
  type AppEndpoint,
} from '../helpers/http.js';
import { serverForSuite, startServer, type TestServer } from '../helpers/server.js';

// Credentials (issue 27): an app's further ClientIDs, each with scopes, an optional expiry and an
// address list, through the real server on the store TEST_STORE names (the runner runs this file on
// SQLite and on PostgreSQL). The server's clock is the test's.

const clock = new FakeClock();
const server = serverForSuite({ clock });

type App = AppEndpoint & { adminId: string };

async function newApp(name = 'Credentials'): Promise<App> {
  return createConfiguredApp(server, {}, name);
}

/** A credential of the app, made by the operator. */
async function credentialOf(app: App, fields: Record<string, unknown>): Promise<CreatedCredential> {
  return server.tessera.credentials.create(app.appId, { name: 'A credential', ...fields }, OPERATOR);
}

/** A form token request with the credential, as OAuth2 clients send it (`client_secret_basic`). */
function tokenRequest(app: App, credential: { clientId: string; clientSecret: string }, fields: Record<string, string> = {}, headers = {}) {
  return request(`${app.appUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      authorization: basic(credential.clientId, credential.clientSecret),
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    },
    body: formBody({ grant_type: 'client_credentials', ...fields }),
  });
}

async function scopedToken(app: App, credential: CreatedCredential, fields: Record<string, string> = {}): Promise<string> {
  const response = await tokenRequest(app, credential, fields);
  assert.equal(response.status, 200, response.text);
  return response.body.access_token as string;
}

/** Each built-in scope's admin feature, called with `token`: its status. */
const FEATURES: Record<(typeof BUILT_IN_SCOPES)[number], (app: App, token: string) => Promise<number>> = {
  'app:read': async (app, token) => (await requestAs(app.appUrl, bearer(token))).status,
  'configuration:read': async (app, token) => (await requestAs(`${app.appUrl}/configuration`, bearer(token))).status,
  'configuration:write': async (app, token) =>
    (
      await request(`${app.appUrl}/configuration`, {
        method: 'PATCH',
        headers: { authorization: bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ requireAppKey: false }),
      })
    ).status,
  'events:read': async (app, token) => (await requestAs(`${app.appUrl}/events`, bearer(token))).status,
  'tokens:introspect': async (app, token) => (await introspectToken(app.appUrl, token, bearer(token))).status,
  'tokens:revoke': async (app, token) => (await requestAs(`${app.appUrl}/tokens?kind=anonymous`, bearer(token), 'DELETE')).status,
  'credentials:manage': async (app, token) => (await requestAs(`${app.appUrl}/credentials`, bearer(token))).status,
  'webhooks:manage': async (app, token) => (await requestAs(`${app.appUrl}/webhooks`, bearer(token))).status,
};

describe('credentials: scopes', () => {
  it('each built-in scope allows its admin feature and nothing else', async () => {
    const app = await newApp('Scope matrix');
    for (const scope of BUILT_IN_SCOPES) {
      const credential = await credentialOf(app, { name: scope, scopes: [scope] });
      const token = await scopedToken(app, credential);
      for (const [feature, call] of Object.entries(FEATURES)) {
        const status = await call(app, token);
        if (feature === scope) assert.equal(status, 200, `${scope} allows ${feature}`);
        else assert.equal(status, 403, `${scope} does not allow ${feature}`);
      }
      await server.tessera.credentials.revoke(app.appId, credential.clientId, OPERATOR);
    }
  });

  it('a feature refused for its scope answers 403 INSUFFICIENT_SCOPE with RFC 6750 insufficient_scope and the scope it needs', async () => {
    const app = await newApp();
    const token = await scopedToken(app, await credentialOf(app, { scopes: ['events:read'] }));
    const refused = await requestAs(`${app.appUrl}/configuration`, bearer(token));
    assertError(refused, 403, 'INSUFFICIENT_SCOPE');
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="configuration:read"');
  });

  it("a scoped token is an admin token for the seed's /me rule, and carries its scopes and credential in whoami", async () => {
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['events:read', 'reports:read'] });
    const token = await scopedToken(app, credential);
    assertError(await requestAs(`${app.appUrl}/users/me`, bearer(token)), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
    const who = await whoami(app.appUrl, bearer(token));
    assert.deepEqual(who.body, {
      appId: app.appId,
      principal: 'admin',
      id: app.adminId,
      auth: 'bearer',
      expiresAt: null,
      scope: 'events:read reports:read',
      clientId: credential.clientId,
    });
  });

  it('a token request narrows the scopes with scope (RFC 6749 section 3.3); asking for more is 400 invalid_scope', async () => {
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['events:read', 'reports:read', 'reports:write'] });
    const all = await tokenRequest(app, credential);
    assert.deepEqual(Object.keys(all.body).sort(), ['access_token', 'expires_in', 'id', 'scope', 'token_type']);
    assert.equal(all.body.scope, 'events:read reports:read reports:write');
    const narrowed = await tokenRequest(app, credential, { scope: 'reports:write reports:read' });
    assert.equal(narrowed.status, 200, narrowed.text);
    assert.equal(narrowed.body.scope, 'reports:read reports:write');
    assert.equal((await whoami(app.appUrl, bearer(narrowed.body.access_token))).body.scope, 'reports:read reports:write');
    assert.equal(await FEATURES['events:read'](app, narrowed.body.access_token as string), 403, 'a narrowed token lost events:read');

    for (const scope of ['app:read', 'reports:read reports:delete', 'tokens:delete', 'Reports', 'a  b']) {
      assertError(await tokenRequest(app, credential, { scope }), 400, 'invalid_scope');
    }
    // The anonymous client ignores scope, as it always has: an anonymous token carries none.
    const anonymous = await requestToken(app, {
      grant_type: 'client_credentials',
      client_id: app.appId,
      client_secret: app.appKey,
      scope: 'events:read',
    });
    assert.deepEqual(Object.keys(anonymous.body).sort(), ['access_token', 'expires_in', 'id', 'token_type']);
  });

  it("the app's own ClientID answers exactly the seed's four fields, whatever scope it sends: it may do everything, as before", async () => {
    const app = await newApp();
    const full = await requestToken(app, { grant_type: 'client_credentials', client_id: app.clientId, client_secret: app.clientSecret });
    assert.deepEqual(Object.keys(full.body).sort(), ['access_token', 'expires_in', 'id', 'token_type']);
    assert.deepEqual(Object.keys((await whoami(app.appUrl, bearer(full.body.access_token))).body).sort(), [
      'appId',
      'auth',
      'expiresAt',
      'id',
      'principal',
    ]);
    const limited = await requestToken(app, {
      grant_type: 'client_credentials',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      scope: 'events:read',
    });
    assert.deepEqual(Object.keys(limited.body).sort(), ['access_token', 'expires_in', 'id', 'token_type']);
    for (const feature of Object.values(FEATURES)) assert.equal(await feature(app, limited.body.access_token as string), 200);
  });

  it("introspection tells a scoped token's scope, and the credential's ClientID as client_id", async () => {
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['reports:read'] });
    const token = await scopedToken(app, credential);
    const answer = await introspectToken(app.appUrl, token, basic(app.clientId, app.clientSecret));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.active, true);
    assert.equal(answer.body.client_id, credential.clientId);
    assert.equal(answer.body.scope, 'reports:read');
    const full = await adminTokenOf(app);
    const original = await introspectToken(app.appUrl, full, basic(app.clientId, app.clientSecret));
    assert.equal(original.body.client_id, app.clientId);
    assert.equal(original.body.scope, undefined);
    // A credential authenticates introspection with its own ClientID, with tokens:introspect only.
    const introspector = await credentialOf(app, { scopes: ['tokens:introspect'] });
    assert.equal((await introspectToken(app.appUrl, token, basic(introspector.clientId, introspector.clientSecret))).body.active, true);
    assertError(await introspectToken(app.appUrl, full, basic(credential.clientId, credential.clientSecret)), 403, 'INSUFFICIENT_SCOPE');
  });

  it('revocation (RFC 7009): a scoped token revokes itself and anonymous tokens; another admin token only with tokens:revoke', async () => {
    const app = await newApp();
    const reader = await credentialOf(app, { scopes: ['events:read'] });
    const own = await scopedToken(app, reader);
    const other = await adminTokenOf(app);
    assertError(await revokeToken(app.appUrl, other, bearer(own)), 403, 'INSUFFICIENT_SCOPE');
    assert.equal((await whoami(app.appUrl, bearer(other))).status, 200);
    assert.equal((await revokeToken(app.appUrl, own)).status, 200);
    assert.equal((await whoami(app.appUrl, bearer(own))).status, 401);

    const revoker = await scopedToken(app, await credentialOf(app, { scopes: ['tokens:revoke'] }));
    assert.equal((await revokeToken(app.appUrl, other, bearer(revoker))).status, 200);
    assert.equal((await whoami(app.appUrl, bearer(other))).status, 401);
  });
});

describe('credentials: expiry and addresses', () => {
  it('a token never outlives its credential; after the expiry, no token, as a wrong secret (401 invalid_client)', async () => {
    const app = await newApp();
    const expiresAt = clock.now() + 3_600_000;
    const credential = await credentialOf(app, { scopes: ['events:read'], expiresAt: new Date(expiresAt).toISOString() });
    const issued = await tokenRequest(app, credential);
    assert.equal(issued.body.expires_in, 3600);
    const who = await whoami(app.appUrl, bearer(issued.body.access_token));
    assert.equal(who.body.expiresAt, expiresAt);
    const shorter = await tokenRequest(app, credential, { expiresAt: String(clock.now() + 60_000) });
    assert.equal(shorter.body.expires_in, 60);

    const before = clock.now();
    clock.time = expiresAt;
    try {
      const expired = await tokenRequest(app, credential);
      const wrong = await tokenRequest(app, { clientId: credential.clientId, clientSecret: otherSecret(credential.clientSecret) });
      assertError(expired, 401, 'invalid_client');
      assert.equal(expired.text, wrong.text, 'an expired credential and a wrong secret answer alike');
      assert.equal(expired.headers.get('www-authenticate'), wrong.headers.get('www-authenticate'));
      assert.equal((await whoami(app.appUrl, bearer(issued.body.access_token))).status, 401, 'its token ended with it');
      const events = await eventsOf(app);
      const refused = events.find((event) => event.type === 'credential.refused');
      assert.deepEqual(refused?.details, { reason: 'credential_expired', clientId: credential.clientId, name: 'A credential' });
      assert.equal(refused?.principal, null, 'a refused attempt names no actor');
      const wrongSecret = events.find((event) => event.type === 'token.refused' && event.details.reason === 'invalid_client');
      assert.deepEqual(wrongSecret?.details, { reason: 'invalid_client', clientId: credential.clientId });
    } finally {
      clock.time = before;
    }
  });

  it('an address list lets only its addresses use the credential; behind a trusted proxy, X-Forwarded-For is the address', async () => {
    const direct = await startServer({ clock });
    const proxied = await startServer({ clock, trustedProxies: ['127.0.0.1'], testStore: direct.testStore });
    after(async () => {
      await proxied.close();
      await direct.close();
    });
    for (const [target, label] of [
      [direct, 'direct'],
      [proxied, 'proxied'],
    ] as const) {
      const app = await createConfiguredApp(target, {}, `Addresses ${label}`);
      const fromLoopback = await target.tessera.credentials.create(
        app.appId,
        { name: 'loopback', scopes: ['events:read'], allowFrom: ['127.0.0.0/8', '::1/128'] },
        OPERATOR,
      );
      const fromOffice = await target.tessera.credentials.create(
        app.appId,
        { name: 'office', scopes: ['events:read'], allowFrom: ['203.0.113.0/24', '2001:db8::/32'] },
        OPERATOR,
      );
      if (label === 'direct') {
        assert.equal((await tokenRequest(app, fromLoopback)).status, 200);
        // Without a trusted proxy, what a client claims in X-Forwarded-For counts for nothing.
        assertError(await tokenRequest(app, fromOffice, {}, { 'x-forwarded-for': '203.0.113.9' }), 401, 'invalid_client');
      } else {
        assert.equal((await tokenRequest(app, fromOffice, {}, { 'x-forwarded-for': '203.0.113.9' })).status, 200);
        assert.equal((await tokenRequest(app, fromOffice, {}, { 'x-forwarded-for': '2001:db8::7' })).status, 200);
        const outside = await tokenRequest(app, fromOffice, {}, { 'x-forwarded-for': '198.51.100.1' });
        assertError(outside, 401, 'invalid_client');
        assertError(await tokenRequest(app, fromLoopback, {}, { 'x-forwarded-for': '203.0.113.9' }), 401, 'invalid_client');
        await target.tessera.events.flush();
        const events = await target.tessera.events.list(app.appId, { limit: 50 });
        const refused = events.events.filter((event) => event.type === 'credential.refused');
        assert.deepEqual(
          refused.map((event) => [event.details.reason, event.details.clientId, event.clientAddress]),
          [
            ['address_not_allowed', fromLoopback.clientId, '203.0.113.9'],
            ['address_not_allowed', fromOffice.clientId, '198.51.100.1'],
          ],
        );
      }
    }
  });
});

describe('credentials: rotation and revocation', () => {
  it('rotation with a grace period: the previous secret works until its end, the new one at once', async () => {
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['events:read'] });
    const rotated = await server.tessera.credentials.rotate(app.appId, credential.clientId, { graceSeconds: 60 }, OPERATOR);
    assert.match(rotated.clientSecret, CLIENT_SECRET_PATTERN);
    const until = clock.now() + 60_000;
    assert.equal(rotated.previousSecretValidUntil, new Date(until).toISOString());
    assert.equal((await tokenRequest(app, credential)).status, 200, 'the previous secret in its grace period');
    assert.equal((await tokenRequest(app, { clientId: credential.clientId, clientSecret: rotated.clientSecret })).status, 200);
    const before = clock.now();
    clock.time = until;
    try {
      assertError(await tokenRequest(app, credential), 401, 'invalid_client');
      assert.equal((await tokenRequest(app, { clientId: credential.clientId, clientSecret: rotated.clientSecret })).status, 200);
    } finally {
      clock.time = before;
    }
    const atOnce = await server.tessera.credentials.rotate(app.appId, credential.clientId, {}, OPERATOR);
    assertError(await tokenRequest(app, { clientId: credential.clientId, clientSecret: rotated.clientSecret }), 401, 'invalid_client');
    assert.equal((await tokenRequest(app, { clientId: credential.clientId, clientSecret: atOnce.clientSecret })).status, 200);
  });

  it("DELETE /previous-secret ends a rotation's grace period now: the replaced secret is refused, the new one works; again, nothing to end", async () => {
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['events:read'] });
    const admin = await adminTokenOf(app);
    const rotated = await postAs(`${app.appUrl}/credentials/${credential.clientId}/rotate`, bearer(admin), { graceSeconds: 3600 });
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal((await tokenRequest(app, credential)).status, 200, 'the replaced secret in its grace period');
    const path = `${app.appUrl}/credentials/${credential.clientId}/previous-secret`;
    const ended = await requestAs(path, bearer(admin), 'DELETE');
    assert.equal(ended.status, 200, ended.text);
    assert.deepEqual(ended.body, { clientId: credential.clientId, endedPreviousSecretValidUntil: rotated.body.previousSecretValidUntil });
    assertError(await tokenRequest(app, credential), 401, 'invalid_client');
    const current = { clientId: credential.clientId, clientSecret: rotated.body.clientSecret as string };
    assert.equal((await tokenRequest(app, current)).status, 200);
    assert.deepEqual((await requestAs(path, bearer(admin), 'DELETE')).body, {
      clientId: credential.clientId,
      endedPreviousSecretValidUntil: null,
    });
    const events = (await eventsOf(app)).filter((event) => event.type === 'credential.previous_secret_ended');
    assert.equal(events.length, 1);
    assert.equal(events[0]!.details.previousSecretValidUntil, Date.parse(rotated.body.previousSecretValidUntil as string));
    const scoped = await scopedToken(app, await credentialOf(app, { scopes: ['events:read'] }));
    assertError(await requestAs(path, bearer(scoped), 'DELETE'), 403, 'INSUFFICIENT_SCOPE');
    assertError(
      await requestAs(`${app.appUrl}/credentials/tcl_000000000000000000000000/previous-secret`, bearer(admin), 'DELETE'),
      404,
      'NOT_FOUND',
    );
  });

  it('revoking a credential refuses its secret and its tokens at once, here and on another instance within a second', async () => {
    const other = await startServer({ clock, testStore: { ...(await secondStoreOf(server)), dispose: async () => {} } });
    after(() => other.close());
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['events:read'] });
    const token = await scopedToken(app, credential);
    const elsewhere = { ...app, appUrl: app.appUrl.replace(server.baseUrl, other.baseUrl) };
    assert.equal((await whoami(elsewhere.appUrl, bearer(token))).status, 200, 'the other instance knows the token');
    const unrelated = await adminTokenOf(app);

    const revoked = await requestAs(`${app.appUrl}/credentials/${credential.clientId}`, bearer(unrelated), 'DELETE');
    assert.equal(revoked.status, 200, revoked.text);
    assert.deepEqual(revoked.body, { clientId: credential.clientId, tokensRevoked: 1, credentialsRevoked: [] });
    assert.equal((await whoami(app.appUrl, bearer(token))).status, 401);
    assertError(await tokenRequest(app, credential), 401, 'invalid_client');

    const deadline = performance.now() + 1_000;
    let refusedElsewhere = false;
    while (!refusedElsewhere && performance.now() < deadline) {
      refusedElsewhere = (await whoami(elsewhere.appUrl, bearer(token))).status === 401;
      if (!refusedElsewhere) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.ok(refusedElsewhere, 'the other instance refuses the token within a second');
    assertError(await tokenRequest(elsewhere, credential), 401, 'invalid_client');
    assert.equal((await whoami(app.appUrl, bearer(unrelated))).status, 200, 'tokens of the app\u2019s own ClientID are untouched');
  });
});

describe('credentials made by credentials: never less limited than their maker, and revoked with it', () => {
  it("a credential's token makes credentials within its own expiry and addresses (its own when left out); more is 403 naming the field", async () => {
    const app = await newApp();
    const expiresAt = clock.now() + 6_000;
    const maker = await credentialOf(app, {
      scopes: ['credentials:manage', 'events:read'],
      expiresAt: new Date(expiresAt).toISOString(),
      allowFrom: ['127.0.0.1', '::1'],
    });
    const token = await scopedToken(app, maker);
    const create = (fields: Record<string, unknown>) =>
      postAs(`${app.appUrl}/credentials`, bearer(token), { scopes: ['events:read'], ...fields });

    const inherited = await create({ name: 'inherits' });
    assert.equal(inherited.status, 201, inherited.text);
    assert.equal(inherited.body.expiresAt, new Date(expiresAt).toISOString());
    assert.deepEqual(inherited.body.allowFrom, ['127.0.0.1/32', '::1/128']);
    const narrower = await create({ name: 'narrower', expiresAt: new Date(expiresAt - 1_000).toISOString(), allowFrom: ['127.0.0.1/32'] });
    assert.equal(narrower.status, 201, narrower.text);

    const later = await create({ name: 'later', expiresAt: new Date(expiresAt + 1_000).toISOString() });
    assertError(later, 403, 'FORBIDDEN');
    assert.ok((later.body.message as string).startsWith('expiresAt '), later.text);
    const wider = await create({ name: 'wider', allowFrom: ['127.0.0.0/8'] });
    assertError(wider, 403, 'FORBIDDEN');
    assert.ok((wider.body.message as string).startsWith('allowFrom '), wider.text);
    assertError(await create({ name: 'elsewhere', allowFrom: ['203.0.113.0/24'] }), 403, 'FORBIDDEN');

    // Rotating hands over what a credential can do: only one at most as limited as the maker.
    const unlimited = await credentialOf(app, { name: 'Unlimited', scopes: ['events:read'] });
    assertError(await postAs(`${app.appUrl}/credentials/${unlimited.clientId}/rotate`, bearer(token), {}), 403, 'FORBIDDEN');
    const rotated = await postAs(`${app.appUrl}/credentials/${inherited.body.clientId as string}/rotate`, bearer(token), {});
    assert.equal(rotated.status, 200, rotated.text);
    const names = (await server.tessera.credentials.list(app.appId, OPERATOR)).map((credential) => credential.name);
    assert.deepEqual(names.sort(), ['A credential', 'Unlimited', 'inherits', 'narrower']);
  });

  it("revoking a credential revokes what its tokens made, and theirs in turn, with their tokens: after the maker's expiry, nothing it made works", async () => {
    const app = await newApp();
    const maker = await credentialOf(app, { name: 'Maker', scopes: ['credentials:manage', 'events:read'] });
    const makerToken = await scopedToken(app, maker);
    const made = await postAs(`${app.appUrl}/credentials`, bearer(makerToken), {
      name: 'Made',
      scopes: ['credentials:manage', 'events:read'],
    });
    assert.equal(made.status, 201, made.text);
    const madeCredential = made.body as unknown as CreatedCredential;
    const madeToken = await scopedToken(app, madeCredential);
    const grandchild = await postAs(`${app.appUrl}/credentials`, bearer(madeToken), { name: 'Made by made', scopes: ['events:read'] });
    assert.equal(grandchild.status, 201, grandchild.text);
    const grandchildToken = await scopedToken(app, grandchild.body);
    const bystander = await credentialOf(app, { name: 'Bystander', scopes: ['events:read'] });
    const bystanderToken = await scopedToken(app, bystander);

    const admin = await adminTokenOf(app);
    const revoked = await requestAs(`${app.appUrl}/credentials/${maker.clientId}`, bearer(admin), 'DELETE');
    assert.equal(revoked.status, 200, revoked.text);
    assert.deepEqual(revoked.body, {
      clientId: maker.clientId,
      tokensRevoked: 1,
      credentialsRevoked: [
        { clientId: madeCredential.clientId, name: 'Made', tokensRevoked: 1 },
        { clientId: grandchild.body.clientId, name: 'Made by made', tokensRevoked: 1 },
      ],
    });
    for (const token of [makerToken, madeToken, grandchildToken]) assert.equal((await whoami(app.appUrl, bearer(token))).status, 401);
    assertError(await tokenRequest(app, madeCredential), 401, 'invalid_client');
    assert.equal((await whoami(app.appUrl, bearer(bystanderToken))).status, 200, 'a credential it did not make is untouched');
    const events = (await eventsOf(app)).filter((event) => event.type === 'credential.revoked');
    assert.deepEqual(
      events.map((event) => [event.details.name, event.details.madeBy ?? null, event.details.revokedWith ?? null]),
      [
        ['Made by made', madeCredential.clientId, maker.clientId],
        ['Made', maker.clientId, maker.clientId],
        ['Maker', null, null],
      ],
    );
  });
});

describe('credentials: the API', () => {
  it('GET and POST /credentials, DELETE /credentials/{clientId}: with credentials:manage, the secret shown once, never listed', async () => {
    const app = await newApp();
    const admin = await adminTokenOf(app);
    const created = await postAs(`${app.appUrl}/credentials`, bearer(admin), {
      name: 'CI events reader',
      scopes: ['events:read'],
      expiresAt: '2030-01-31T00:00:00Z',
      allowFrom: ['203.0.113.0/24'],
    });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.clientId as string, /^tcl_[0-9a-f]{24}$/);
    assert.match(created.body.clientSecret as string, CLIENT_SECRET_PATTERN);
    assert.equal(created.headers.get('cache-control'), 'no-store');
    assert.deepEqual(
      { ...created.body, clientId: undefined, clientSecret: undefined, createdAt: undefined },
      {
        clientId: undefined,
        clientSecret: undefined,
        createdAt: undefined,
        name: 'CI events reader',
        scopes: ['events:read'],
        expiresAt: '2030-01-31T00:00:00.000Z',
        allowFrom: ['203.0.113.0/24'],
        createdBy: 'admin',
        createdByClientId: app.clientId,
        lastUsedAt: null,
        previousSecretValidUntil: null,
        accessTokenFormat: null,
      },
    );
    const listed = await requestAs(`${app.appUrl}/credentials`, bearer(admin));
    assert.equal(listed.status, 200);
    assert.equal(listed.body.credentials.length, 1);
    assert.ok(!listed.text.includes(created.body.clientSecret as string), 'never a secret in the list');

    const manager = await credentialOf(app, { scopes: ['credentials:manage', 'events:read'] });
    const managerToken = await scopedToken(app, manager);
    const byManager = await postAs(`${app.appUrl}/credentials`, bearer(managerToken), { name: 'narrower', scopes: ['events:read'] });
    assert.equal(byManager.status, 201, byManager.text);
    assert.equal(byManager.body.createdByClientId, manager.clientId);
    const wider = await postAs(`${app.appUrl}/credentials`, bearer(managerToken), { name: 'wider', scopes: ['configuration:write'] });
    assertError(wider, 403, 'INSUFFICIENT_SCOPE');

    const rotated = await postAs(`${app.appUrl}/credentials/${created.body.clientId}/rotate`, bearer(admin), { graceSeconds: 30 });
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.clientSecret as string, CLIENT_SECRET_PATTERN);

    const deleted = await requestAs(`${app.appUrl}/credentials/${created.body.clientId}`, bearer(admin), 'DELETE');
    assert.equal(deleted.status, 200, deleted.text);
    assertError(await requestAs(`${app.appUrl}/credentials/${created.body.clientId}`, bearer(admin), 'DELETE'), 404, 'NOT_FOUND');
    assertError(await requestAs(`${app.appUrl}/credentials`, basic(app.appId)), 403, 'ADMIN_REQUIRED');

    await server.tessera.events.flush();
    const types = (await server.tessera.events.list(app.appId, { limit: 100 })).events.map((event) => event.type);
    for (const type of ['credential.created', 'credential.rotated', 'credential.revoked'] as const) assert.ok(types.includes(type), type);
    const page = await requestAs(`${app.appUrl}/events?limit=100`, bearer(admin));
    for (const secret of [created.body.clientSecret, rotated.body.clientSecret, manager.clientSecret]) {
      assert.ok(!page.text.includes(secret as string), 'no secret in the audit log');
    }
  });

  describe('bad input is 400 naming the field, and stores nothing', () => {
    let app: App;
    let admin: string;
    before(async () => {
      app = await newApp();
      admin = await adminTokenOf(app);
    });
    const create = (body: unknown) => postAs(`${app.appUrl}/credentials`, bearer(admin), body);

    interface Refusal {
      name: string;
      body: unknown;
      status: number;
      code: string;
      /** The field the message starts with. */
      field?: string;
    }
    /** A 400 invalid_request whose message names `field`. */
    const badField = (name: string, field: string, body: unknown): Refusal => ({ name, body, status: 400, code: 'invalid_request', field });
    const READ = ['events:read'];

    const refusals: Refusal[] = [
      badField('no name', 'name', { scopes: READ }),
      badField('a control character in the name', 'name', { name: 'a\u0007b', scopes: READ }),
      badField('a name of 101 characters', 'name', { name: 'x'.repeat(101), scopes: READ }),
      badField('no scopes', 'scopes', { name: 'n' }),
      badField('an empty scopes', 'scopes', { name: 'n', scopes: [] }),
      badField('an unknown scope', 'scopes', { name: 'n', scopes: ['tokens:delete'] }),
      badField('a scope in capitals', 'scopes', { name: 'n', scopes: ['Events'] }),
      badField('a scope of 65 characters', 'scopes', { name: 'n', scopes: ['x'.repeat(65)] }),
      badField('33 scopes', 'scopes', { name: 'n', scopes: Array.from({ length: 33 }, (_, i) => `s${i}`) }),
      badField('expiresAt in the past', 'expiresAt', { name: 'n', scopes: READ, expiresAt: '2001-01-01T00:00:00Z' }),
      badField('expiresAt not a date', 'expiresAt', { name: 'n', scopes: READ, expiresAt: 'tomorrow' }),
      badField('a CIDR with host bits', 'allowFrom', { name: 'n', scopes: READ, allowFrom: ['10.0.0.1/8'] }),
      badField('an address out of range', 'allowFrom', { name: 'n', scopes: READ, allowFrom: ['300.0.0.0/8'] }),
      badField('allowFrom not a list', 'allowFrom', { name: 'n', scopes: READ, allowFrom: 'everywhere' }),
      { name: 'a JSON array', body: ['not an object'], status: 400, code: 'invalid_request' },
      { name: 'a name of 9000 characters', body: { name: 'x'.repeat(9000), scopes: [] }, status: 413, code: 'REQUEST_TOO_LARGE' },
    ];

    for (const { name, body, status, code, field } of refusals) {
      it(`${name}: ${status} ${code}${field === undefined ? '' : ` naming ${field}`}`, async () => {
        const refused = await create(body);
        assertError(refused, status, code);
        if (field !== undefined) assert.ok((refused.body.message as string).startsWith(`${field} `), refused.text);
      });
    }

    it('stores none of them', async () => {
      assert.deepEqual((await requestAs(`${app.appUrl}/credentials`, bearer(admin))).body, { credentials: [] });
    });
  });

  it(`an app has at most ${MAX_CREDENTIALS_PER_APP} credentials`, async () => {
    const app = await newApp();
    await Promise.all(
      Array.from({ length: MAX_CREDENTIALS_PER_APP }, (_, i) => credentialOf(app, { name: `c${i}`, scopes: ['events:read'] })),
    );
    await assert.rejects(credentialOf(app, { name: 'one more', scopes: ['events:read'] }), { code: 'CONFLICT' });
    assert.equal((await server.tessera.credentials.list(app.appId, OPERATOR)).length, MAX_CREDENTIALS_PER_APP);
  });

  it('records when a credential was last used, at most once a minute', async () => {
    const app = await newApp();
    const credential = await credentialOf(app, { scopes: ['events:read'] });
    const lastUsed = async () => (await server.tessera.credentials.list(app.appId, OPERATOR))[0]!.lastUsedAt;
    assert.equal(await lastUsed(), null);
    const first = clock.now();
    await scopedToken(app, credential);
    await eventually(async () => (await lastUsed()) === new Date(first).toISOString());
    clock.advance(30_000);
    await scopedToken(app, credential);
    clock.advance(31_000);
    const third = clock.now();
    await scopedToken(app, credential);
    await eventually(async () => (await lastUsed()) === new Date(third).toISOString());
  });
});

/** The app's audit events, newest first, as the API gives them. */
async function eventsOf(app: App) {
  await server.tessera.events.flush();
  return (await server.tessera.events.list(app.appId, { limit: 100 })).events;
}

/** A secret one character off `secret`: its last one changed (to another, whatever it was). */
function otherSecret(secret: string): string {
  return `${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`;
}

async function eventually(condition: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 2_000;
  while (!(await condition())) {
    if (performance.now() > deadline) assert.fail('not within 2 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Another connection to the same store, as a second instance has. */
async function secondStoreOf(target: TestServer) {
  const store = await openStore(target.testStore.databaseUrl);
  return { store, databaseUrl: target.testStore.databaseUrl };
}
