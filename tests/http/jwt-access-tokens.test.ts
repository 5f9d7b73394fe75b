import assert from 'node:assert/strict';
import { sign } from 'node:crypto';
import { describe, it } from 'node:test';
import Database from 'libsql';
import pg from 'pg';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oauth from 'oauth4webapi';
import { DEFAULT_HOUSEKEEPING } from '../../src/housekeeping.js';
import { OPERATOR } from '../../src/request-context.js';
import { openStore } from '../../src/store/open.js';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { forged, forgedTokens, isSet, partsOf, publicXOf, statusListAt, statusReferenceOf } from '../helpers/jwt.js';
import {
  adminFields,
  adminTokenOf,
  anonymousTokenOf,
  bearer,
  introspectToken,
  request,
  requestAs,
  requestToken,
  revokeToken,
  whoami,
} from '../helpers/http.js';
import { serverForSuite, startServer, type TestServer } from '../helpers/server.js';

const clock = new FakeClock(Date.now());
const server = serverForSuite({ clock }, (started) => configure(started, { accessTokenFormat: 'jwt' }));
const opaque = serverForSuite({});

const configure = (target: TestServer, changes: object) => target.tessera.apps.configure(target.app.appId, changes, OPERATOR);

/** How many rows of the server's app a table of its store holds. */
async function rowsIn(target: TestServer, table: string): Promise<number> {
  const { databaseUrl } = target.testStore;
  const query = `SELECT count(*) AS n FROM ${table} WHERE app_id = '${target.app.appId}'`;
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return Number((db.prepare(query).get() as { n: number }).n);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(query)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** Whether a token's bit is set in its status list, and the list's claims. */
async function statusOf(token: string): Promise<{ revoked: boolean; list: Record<string, unknown> }> {
  // An instance builds a list at most once a second.
  clock.advance(1_001);
  const { idx, uri } = statusReferenceOf(token);
  const { claims, bits } = await statusListAt(uri);
  return { revoked: isSet(bits, idx), list: claims };
}

describe('JWT access tokens', () => {
  it('are off by default: tokens stay opaque, and the metadata names the JWKS', async () => {
    const token = await adminTokenOf(opaque);
    assert.equal(token.length, 43);
    const metadata = await requestAs(`${opaque.baseUrl}/.well-known/oauth-authorization-server/api/apps/${opaque.app.appId}`);
    assert.equal(metadata.body.jwks_uri, `${opaque.appUrl}/jwks.json`);
  });

  it('an admin token follows RFC 9068: header, claims, and an answer with the seed four fields', async () => {
    const response = await requestToken(server, adminFields(server));
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), ['access_token', 'expires_in', 'id', 'token_type']);
    const token = response.body.access_token as string;
    const header = decodeProtectedHeader(token);
    assert.deepEqual(Object.keys(header).sort(), ['alg', 'kid', 'typ']);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.alg, 'EdDSA');
    const claims = decodeJwt(token);
    assert.equal(claims.iss, server.appUrl);
    assert.equal(claims.sub, server.app.adminId);
    assert.equal(claims.aud, `tessera:app:${server.app.appId}`);
    assert.equal(claims.client_id, server.app.clientId);
    assert.equal(claims.app_id, server.app.appId);
    assert.equal(typeof claims.jti, 'string');
    // Without expiresAt, a JWT gets the longest lifetime there is: 24 hours.
    assert.equal(claims.exp! - claims.iat!, 24 * 3600);
    assert.ok(Math.abs(claims.iat! + (response.body.expires_in as number) - claims.exp!) <= 1);
    assert.equal(response.body.id, server.app.adminId);
    assert.equal((await whoami(server.appUrl, bearer(token))).body.principal, 'admin');
  });

  it('an anonymous token is a JWT too, checked by whoami and introspection, and keeps the /me rule apart', async () => {
    const token = await anonymousTokenOf(server);
    const claims = decodeJwt(token);
    assert.equal(claims.sub, 'ANONYMOUS');
    assert.equal(claims.client_id, server.app.appId);
    const me = await whoami(server.appUrl, bearer(token));
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.principal, 'anonymous');
    const admin = await adminTokenOf(server);
    const introspected = await introspectToken(server.appUrl, token, bearer(admin));
    assert.equal(introspected.body.active, true);
    assert.equal(introspected.body.token_type, 'bearer');
    assertError(await requestAs(`${server.appUrl}/users/me`, bearer(admin)), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
    assert.equal((await requestAs(`${server.appUrl}/users/me`, bearer(token))).status === 400, false);
  });

  it('an anonymous JWT writes nothing of its own: a block of status list indexes serves many', async () => {
    const target = await startServer({ clock });
    try {
      await configure(target, { accessTokenFormat: 'jwt' });
      const count = (table: string) => rowsIn(target, table);
      const tokensBefore = await count('tokens');
      const indexes = new Set<number>();
      for (let n = 0; n < 300; n++) indexes.add(statusReferenceOf(await anonymousTokenOf(target)).idx);
      assert.equal(indexes.size, 300, 'each its own index');
      assert.equal(await count('tokens'), tokensBefore, 'no row per token');
      assert.equal(await count('status_list_blocks'), 3, 'blocks of 64, 128 and 256 indexes: three writes for 300 tokens');
    } finally {
      await target.close();
    }
  });

  it('jose (createRemoteJWKSet, jwtVerify) and oauth4webapi (validateJwtAccessToken) verify them as they are', async () => {
    const token = await adminTokenOf(server);
    const metadata = (await requestAs(`${server.baseUrl}/.well-known/oauth-authorization-server/api/apps/${server.app.appId}`)).body;
    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri as string));
    const verified = await jwtVerify(token, jwks, {
      issuer: server.appUrl,
      audience: `tessera:app:${server.app.appId}`,
      typ: 'at+jwt',
    });
    assert.equal(verified.payload.sub, server.app.adminId);

    const as = await oauth.processDiscoveryResponse(
      new URL(server.appUrl),
      await oauth.discoveryRequest(new URL(server.appUrl), { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
    );
    const claims = await oauth.validateJwtAccessToken(
      as,
      new Request(`${server.baseUrl}/resource`, { headers: { authorization: `Bearer ${token}` } }),
      `tessera:app:${server.app.appId}`,
      { [oauth.allowInsecureRequests]: true },
    );
    assert.equal(claims.client_id, server.app.clientId);
  });

  it('the JWKS and the status lists are public and cacheable', async () => {
    const jwks = await fetch(`${server.appUrl}/jwks.json`);
    assert.equal(jwks.status, 200);
    assert.equal(jwks.headers.get('cache-control'), 'public, max-age=300');
    const body = (await jwks.json()) as { keys: { kid: string; alg: string; use: string; d?: string }[] };
    assert.ok(body.keys.length >= 1);
    for (const key of body.keys) {
      assert.equal(key.use, 'sig');
      assert.equal(key.d, undefined, 'no private part');
    }
    const token = await anonymousTokenOf(server);
    const { revoked, list } = await statusOf(token);
    assert.equal(revoked, false);
    assert.equal(list.ttl, 60);
    assert.equal((await request(`${server.baseUrl}/api/status-lists/999999`)).status, 404);
    assert.equal((await request(`${server.baseUrl}/api/status-lists/abc`)).status, 404);
  });

  it('a revocation (RFC 7009) ends an admin JWT at once, and sets its bit in the status list', async () => {
    const token = await adminTokenOf(server);
    const other = await adminTokenOf(server);
    assert.equal((await statusOf(token)).revoked, false);
    assert.equal((await revokeToken(server.appUrl, token, bearer(other))).status, 200);
    assertError(await whoami(server.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
    assert.equal((await introspectToken(server.appUrl, token, bearer(other))).body.active, false);
    assert.equal((await statusOf(token)).revoked, true);
    assert.equal((await statusOf(other)).revoked, false);
  });

  it('a revocation ends an anonymous JWT at once, and sets its bit', async () => {
    const token = await anonymousTokenOf(server);
    const kept = await anonymousTokenOf(server);
    assert.equal((await revokeToken(server.appUrl, token)).status, 200);
    assertError(await whoami(server.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
    assert.equal((await statusOf(token)).revoked, true);
    assert.equal((await statusOf(kept)).revoked, false);
    assert.equal((await whoami(server.appUrl, bearer(kept))).status, 200);
  });

  it("revoke-all sets the bits of the app's JWTs: admin ones by their rows, anonymous ones by their blocks; new ones are clear", async () => {
    const target = await startServer({ clock });
    try {
      await configure(target, { accessTokenFormat: 'jwt' });
      const admin = await adminTokenOf(target);
      const anonymous = await anonymousTokenOf(target);
      const response = await request(`${target.appUrl}/tokens?kind=all`, { method: 'DELETE', headers: { authorization: bearer(admin) } });
      assert.equal(response.status, 200, response.text);
      assert.equal((await statusOf(admin)).revoked, true);
      assert.equal((await statusOf(anonymous)).revoked, true);
      assertError(await whoami(target.appUrl, bearer(anonymous)), 401, 'INVALID_TOKEN');
      clock.advance(5);
      const fresh = await anonymousTokenOf(target);
      assert.equal((await statusOf(fresh)).revoked, false);
      assert.equal((await whoami(target.appUrl, bearer(fresh))).status, 200);
    } finally {
      await target.close();
    }
  });

  it("an app's deletion sets the bits of all its JWTs", async () => {
    const target = await startServer({ clock });
    try {
      await configure(target, { accessTokenFormat: 'jwt' });
      const admin = await adminTokenOf(target);
      const anonymous = await anonymousTokenOf(target);
      await target.tessera.apps.delete(target.app.appId, OPERATOR);
      assert.equal((await statusOf(admin)).revoked, true);
      assert.equal((await statusOf(anonymous)).revoked, true);
    } finally {
      await target.close();
    }
  });

  it('a credential with scopes gets a scope claim; its revocation sets the bit', async () => {
    const admin = await adminTokenOf(server);
    const created = await request(`${server.appUrl}/credentials`, {
      method: 'POST',
      headers: { authorization: bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'jwt reader', scopes: ['events:read', 'orders:read'] }),
    });
    assert.equal(created.status, 201, created.text);
    const { clientId, clientSecret } = created.body as { clientId: string; clientSecret: string };
    const token = (
      await requestToken(server, {
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: clientSecret,
        scope: 'orders:read',
      })
    ).body.access_token as string;
    const claims = decodeJwt(token);
    assert.equal(claims.scope, 'orders:read');
    assert.equal(claims.client_id, clientId);
    const revoked = await request(`${server.appUrl}/credentials/${clientId}`, {
      method: 'DELETE',
      headers: { authorization: bearer(admin) },
    });
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal((await statusOf(token)).revoked, true);
    assertError(await whoami(server.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
  });

  it("a credential's own format wins over the app's, both ways", async () => {
    const admin = await adminTokenOf(opaque);
    const create = async (body: object) => {
      const created = await request(`${opaque.appUrl}/credentials`, {
        method: 'POST',
        headers: { authorization: bearer(admin), 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'service', scopes: ['events:read'], ...body }),
      });
      assert.equal(created.status, 201, created.text);
      return created.body as { clientId: string; clientSecret: string; accessTokenFormat: string | null };
    };
    const jwtCredential = await create({ accessTokenFormat: 'jwt' });
    assert.equal(jwtCredential.accessTokenFormat, 'jwt');
    const tokenOf = async ({ clientId, clientSecret }: { clientId: string; clientSecret: string }) =>
      (await requestToken(opaque, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret })).body
        .access_token as string;
    const jwt = await tokenOf(jwtCredential);
    assert.equal(decodeProtectedHeader(jwt).typ, 'at+jwt');
    assert.equal((await whoami(opaque.appUrl, bearer(jwt))).body.principal, 'admin');
    assert.equal((await tokenOf(await create({}))).length, 43, "null: the app's format, opaque");
    assertError(
      await request(`${opaque.appUrl}/credentials`, {
        method: 'POST',
        headers: { authorization: bearer(admin), 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bad', scopes: ['events:read'], accessTokenFormat: 'paseto' }),
      }),
      400,
      'invalid_request',
    );
    const inJwtApp = await adminTokenOf(server);
    const opaqueInJwtApp = await request(`${server.appUrl}/credentials`, {
      method: 'POST',
      headers: { authorization: bearer(inJwtApp), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'legacy', scopes: ['events:read'], accessTokenFormat: 'opaque' }),
    });
    assert.equal(opaqueInJwtApp.status, 201, opaqueInJwtApp.text);
    const legacy = (
      await requestToken(server, {
        grant_type: 'client_credentials',
        client_id: opaqueInJwtApp.body.clientId,
        client_secret: opaqueInJwtApp.body.clientSecret,
      })
    ).body.access_token as string;
    assert.equal(legacy.length, 43, 'an opaque credential in a JWT app');
  });

  it('the longest JWT there can be (32 longest scopes, 5 longest audiences) is within the limits, and works', async () => {
    const admin = await adminTokenOf(server);
    const scopes = Array.from({ length: 32 }, (_, index) => `${'s'.repeat(60)}:${String(index).padStart(3, '0')}`);
    const audiences = Array.from({ length: 5 }, (_, index) => `https://${'a'.repeat(86)}.example/${index}`);
    await configure(server, { accessTokenAudience: audiences });
    try {
      const created = await request(`${server.appUrl}/credentials`, {
        method: 'POST',
        headers: { authorization: bearer(admin), 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'widest', scopes }),
      });
      assert.equal(created.status, 201, created.text);
      const { clientId, clientSecret } = created.body as { clientId: string; clientSecret: string };
      const issued = await requestToken(server, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
      assert.equal(issued.status, 200, issued.text);
      const token = issued.body.access_token as string;
      assert.ok(token.length > 4000 && token.length <= 6144, `${token.length} characters`);
      assert.equal((await whoami(server.appUrl, bearer(token))).status, 200);
      assert.equal((await whoami(server.appUrl, bearer(`${token}x`))).status, 401);
    } finally {
      await configure(server, { accessTokenAudience: null });
    }
  });

  it('an expired JWT is refused by whoami and introspection', async () => {
    const token = await anonymousTokenOf(server);
    const admin = await adminTokenOf(server, { expiresAt: clock.now() + 25 * 3_600_000 });
    assert.equal(decodeJwt(admin).exp! - decodeJwt(admin).iat!, 24 * 3600, 'a later expiresAt is cut to 24 hours');
    clock.advance(24 * 3_600_000 + 1_000);
    try {
      assertError(await whoami(server.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
      assertError(await whoami(server.appUrl, bearer(admin)), 401, 'INVALID_TOKEN');
      const fresh = await adminTokenOf(server);
      assert.equal((await introspectToken(server.appUrl, token, bearer(fresh))).body.active, false);
      await server.tessera.events.flush();
      const refused = (await requestAs(`${server.appUrl}/events?type=token.refused&limit=5`, bearer(fresh))).body.events as {
        details: { problem?: string };
      }[];
      assert.equal(refused[0]?.details.problem, 'expired');
    } finally {
      // The keys made for the tests after this one are published from the new time on.
      clock.advance(1);
    }
  });

  it('refuses forged and foreign tokens with 401 INVALID_TOKEN, never a 500', async () => {
    const genuine = await anonymousTokenOf(server);
    const otherApp = await startServer({});
    await configure(otherApp, { accessTokenFormat: 'jwt' });
    const foreign = await anonymousTokenOf(otherApp);
    await otherApp.close();
    const cases = forgedTokens(genuine, await publicXOf(genuine, `${server.appUrl}/jwks.json`), foreign);
    // Signed with the server's own key, but living longer than it ever signs one for: not of its making.
    const key = await server.tessera.jwt.keys.signingKey();
    const { header, claims } = partsOf(genuine);
    cases['signed by the right key, for longer than 24 hours'] = forged(
      header,
      { ...claims, exp: (claims.exp as number) + 86_400 },
      (input) => sign(null, Buffer.from(input), key.privateKey).toString('base64url'),
    );
    const problems: Record<string, string> = {
      'alg none': 'algorithm',
      'HS256 with the public key': 'algorithm',
      'a kid not published': 'unknown_key',
      'signed by another key': 'signature',
      'claims altered': 'signature',
      'another app': 'other_app',
      'a header over the limit': 'malformed',
      'not base64url': 'malformed',
      'two parts': 'malformed',
      'signed by the right key, for longer than 24 hours': 'malformed',
    };
    for (const [name, token] of Object.entries(cases)) {
      const response = await whoami(server.appUrl, bearer(token));
      assert.equal(response.status, 401, `${name}: ${response.status} ${response.text}`);
      assert.equal(response.body.errorCode, 'INVALID_TOKEN', name);
    }
    // Each refusal is in the audit log with its reason.
    await server.tessera.events.flush();
    const admin = await adminTokenOf(server);
    const refused = (await requestAs(`${server.appUrl}/events?type=token.refused&limit=100`, bearer(admin))).body.events as {
      details: { reason: string; problem?: string };
    }[];
    const seen = refused.map((event) => event.details.problem).filter((problem) => problem !== undefined);
    for (const [name, problem] of Object.entries(problems)) assert.ok(seen.includes(problem), `${name}: ${problem} in ${seen.join(', ')}`);
    assert.ok(refused.every((event) => event.details.reason === 'invalid_token'));
  });

  it('tessera keys rotate publishes the new key ahead; it signs once its time comes, and the old one stays published', async () => {
    const before = decodeProtectedHeader(await adminTokenOf(server)).kid;
    const keys = await server.tessera.jwt.keys.rotate({ aheadMs: 60_000 });
    const pending = keys.find((key) => key.state === 'pending')!;
    assert.ok(pending);
    const published = ((await (await fetch(`${server.appUrl}/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map(
      (key) => key.kid,
    );
    assert.ok(published.includes(pending.kid) && published.includes(before!));
    assert.equal(decodeProtectedHeader(await adminTokenOf(server)).kid, before, 'the old key signs until the new one is due');
    const older = await anonymousTokenOf(server);
    clock.advance(60_001);
    const after = await adminTokenOf(server);
    assert.equal(decodeProtectedHeader(after).kid, pending.kid);
    assert.equal((await whoami(server.appUrl, bearer(older))).status, 200, 'a token of the old key still works');
    const states = Object.fromEntries((await server.tessera.jwt.keys.list()).map((key) => [key.kid, key.state]));
    assert.equal(states[before!], 'verifying');
    assert.equal(states[pending.kid], 'signing');
  });

  it('a later rotation wins over a key rolled ahead before it: the earlier one never signs', async () => {
    const ahead = (await server.tessera.jwt.keys.rotate({ aheadMs: 60_000 })).find((key) => key.state === 'pending')!;
    const now = (await server.tessera.jwt.keys.rotate({ aheadMs: 0 })).find((key) => key.state === 'signing')!;
    assert.notEqual(ahead.kid, now.kid);
    assert.equal(decodeProtectedHeader(await adminTokenOf(server)).kid, now.kid);
    clock.advance(60_001);
    assert.equal(decodeProtectedHeader(await adminTokenOf(server)).kid, now.kid, 'the key made last signs');
    const states = Object.fromEntries((await server.tessera.jwt.keys.list()).map((key) => [key.kid, key.state]));
    assert.equal(states[ahead.kid], 'verifying');
  });

  it('housekeeping rolls a key in once the signing one is JWT_KEY_ROTATION_DAYS old, and erases the private keys that sign no more', async () => {
    const target = await startServer({ clock, housekeeping: { ...DEFAULT_HOUSEKEEPING, jwtKeyRotationMs: 86_400_000 } });
    try {
      await configure(target, { accessTokenFormat: 'jwt' });
      const first = decodeProtectedHeader(await adminTokenOf(target)).kid;
      assert.equal((await target.tessera.housekeeping.run()).jwtKeyRotated, false, 'not old enough');
      clock.advance(86_400_000);
      assert.equal((await target.tessera.housekeeping.run()).jwtKeyRotated, true);
      assert.equal((await target.tessera.housekeeping.run()).jwtKeyRotated, false, 'one pending key is enough');
      const keys = await target.tessera.jwt.keys.list();
      assert.deepEqual(keys.map((key) => key.state).sort(), ['pending', 'signing']);
      clock.advance(3_600_001);
      await target.tessera.housekeeping.run();
      assert.notEqual(decodeProtectedHeader(await adminTokenOf(target)).kid, first);
      const stored = await target.testStore.store.jwtKeys.listJwtKeys();
      assert.equal(stored.find((key) => key.kid === first)?.encryptedPrivateKey, null, 'erased once a later key signs');
    } finally {
      await target.close();
    }
  });

  it('ES256 keys, for verifiers without Ed25519', async () => {
    await server.tessera.jwt.keys.rotate({ algorithm: 'ES256', aheadMs: 0 });
    clock.advance(1);
    const token = await adminTokenOf(server);
    assert.equal(decodeProtectedHeader(token).alg, 'ES256');
    const jwks = createRemoteJWKSet(new URL(`${server.appUrl}/jwks.json`));
    assert.equal((await jwtVerify(token, jwks, { issuer: server.appUrl, typ: 'at+jwt' })).payload.sub, server.app.adminId);
    assert.equal((await whoami(server.appUrl, bearer(token))).status, 200);
  });

  it('without a key encryption key, or with another than the keys were made with: 503 saying why, and opaque tokens as ever', async () => {
    const none = await startServer({ keyEncryptionKey: null });
    try {
      await configure(none, { accessTokenFormat: 'jwt' });
      const refused = await requestToken(none, adminFields(none));
      assertError(refused, 503, 'SERVICE_UNAVAILABLE');
      assert.match(refused.body.message as string, /KEY_ENCRYPTION_KEY/);
      await configure(none, { accessTokenFormat: 'opaque' });
      assert.equal((await adminTokenOf(none)).length, 43);
    } finally {
      await none.close();
    }
    // A second instance on the same store with a key of its own cannot use the keys the first made.
    const first = await startServer({});
    const { databaseUrl } = first.testStore;
    const store = await openStore(databaseUrl);
    const second = await startServer({
      keyEncryptionKey: Buffer.alloc(32, 9),
      testStore: { store, databaseUrl, dispose: () => store.close() },
    });
    try {
      await configure(first, { accessTokenFormat: 'jwt' });
      assert.equal((await requestToken(first, adminFields(first))).status, 200);
      const app = { app: first.app, appUrl: first.appUrl.replace(first.baseUrl, second.baseUrl) };
      const refused = await requestToken(app, adminFields(app));
      assertError(refused, 503, 'SERVICE_UNAVAILABLE');
      assert.match(refused.body.message as string, /does not decrypt with this instance's KEY_ENCRYPTION_KEY/);
    } finally {
      await second.close();
      await second.testStore.dispose();
      await first.close();
    }
  });

  it('the key encryption key is replaced without a gap: the previous one decrypts, a rotation moves to the new one', async () => {
    const [oldKey, newKey] = [Buffer.alloc(32, 21), Buffer.alloc(32, 22)];
    const first = await startServer({ clock, keyEncryptionKey: oldKey });
    const { databaseUrl } = first.testStore;
    const instances: TestServer[] = [];
    const another = async (options: { keyEncryptionKey: Buffer; previousKeyEncryptionKey?: Buffer }) => {
      const store = await openStore(databaseUrl);
      const started = await startServer({ clock, ...options, testStore: { store, databaseUrl, dispose: () => store.close() } });
      instances.push(started);
      return { started, app: { app: first.app, appUrl: first.appUrl.replace(first.baseUrl, started.baseUrl) } };
    };
    try {
      await configure(first, { accessTokenFormat: 'jwt' });
      const before = await adminTokenOf(first);
      // Every instance gets the new key, and the old one as the previous.
      const moving = await another({ keyEncryptionKey: newKey, previousKeyEncryptionKey: oldKey });
      assert.equal(
        (await requestToken(moving.app, adminFields(moving.app))).status,
        200,
        'the old key still signs, decrypted with the previous',
      );
      await moving.started.tessera.jwt.keys.rotate({ aheadMs: 0 });
      clock.advance(1);
      await moving.started.tessera.housekeeping.run();
      // Then the previous one is no longer needed: the key that signs was made under the new one.
      const moved = await another({ keyEncryptionKey: newKey });
      const after = await requestToken(moved.app, adminFields(moved.app));
      assert.equal(after.status, 200, after.text);
      assert.notEqual(decodeProtectedHeader(after.body.access_token as string).kid, decodeProtectedHeader(before).kid);
      assert.equal(
        (await whoami(moved.app.appUrl, bearer(before))).status,
        200,
        "the old key's tokens still work: its public key is published",
      );
    } finally {
      for (const instance of instances) {
        await instance.close();
        await instance.testStore.dispose();
      }
      await first.close();
    }
  });

  it('accessTokenFormat and accessTokenAudience are checked, and the audience goes into aud', async () => {
    const admin = await adminTokenOf(server);
    const patch = (body: object) =>
      request(`${server.appUrl}/configuration`, {
        method: 'PATCH',
        headers: { authorization: bearer(admin), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const wrong of [
      { accessTokenFormat: 'paseto' },
      { accessTokenAudience: [] },
      { accessTokenAudience: ['has space'] },
      { accessTokenAudience: 'x' },
    ]) {
      assertError(await patch(wrong), 400, 'invalid_request');
    }
    assert.equal((await patch({ accessTokenAudience: ['https://api.example.com', 'orders'] })).status, 200);
    assert.deepEqual(decodeJwt(await adminTokenOf(server)).aud, ['https://api.example.com', 'orders']);
    assert.equal((await patch({ accessTokenAudience: null })).status, 200);
    assert.equal(decodeJwt(await adminTokenOf(server)).aud, `tessera:app:${server.app.appId}`);
  });
});
