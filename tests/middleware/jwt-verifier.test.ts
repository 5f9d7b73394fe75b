import assert from 'node:assert/strict';
import { sign } from 'node:crypto';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oauth from 'oauth4webapi';
// Through the package's own names (its "exports" map), as another service imports them.
import { requireAdmin, tesseraAuth } from 'tessera-tokens/middleware/fastify';
import { TesseraError, TesseraJwtVerifier, TesseraVerifier, type Principal } from 'tessera-tokens/verifier';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { forged, forgedTokens, partsOf, publicXOf, strangerSigner } from '../helpers/jwt.js';
import { sleep } from '../helpers/fleet.js';
import { adminTokenOf, anonymousTokenOf, appOn, basic, bearer, request, requestAs, requestToken, revokeToken } from '../helpers/http.js';
import { serverForSuite, startServer, type TestServer } from '../helpers/server.js';

// JWT access tokens checked in another service with no access to Tessera's store: a
// `TesseraJwtVerifier` reading a real server's metadata, JWKS and status lists, beside jose and
// oauth4webapi; and through a real Fastify service with `tesseraAuth`.

const clock = new FakeClock(Date.now());
const server = serverForSuite({ clock, statusListTtlSeconds: 1 }, (started) => useJwts(started, started.app.appId));

const useJwts = (target: TestServer, appId: string) => target.tessera.apps.configure(appId, { accessTokenFormat: 'jwt' }, OPERATOR);

/** The principal's fields, without the store's symbol (the selector of the token, for Tessera's own revocation). */
const fieldsOf = (principal: Principal) => Object.fromEntries(Object.entries(principal));

/** What `work` throws or rejects with: the contract's error, whose code is returned. */
async function refusal(work: () => unknown): Promise<TesseraError> {
  try {
    await work();
  } catch (error) {
    assert.ok(error instanceof TesseraError, `not a TesseraError: ${String(error)}`);
    return error;
  }
  assert.fail('not refused');
}

async function assertInvalid(verifier: TesseraJwtVerifier, token: string, name: string): Promise<void> {
  const error = await refusal(() => verifier.verify(token));
  assert.equal(error.code, 'INVALID_TOKEN', `${name}: ${error.code} ${error.message}`);
  assert.equal(error.status, 401, name);
}

async function credentialToken(target: TestServer, admin: string, body: object): Promise<string> {
  const created = await request(`${target.appUrl}/credentials`, {
    method: 'POST',
    headers: { authorization: bearer(admin), 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'reports', scopes: ['reports:read', 'events:read'], ...body }),
  });
  assert.equal(created.status, 201, created.text);
  const { clientId, clientSecret } = created.body as { clientId: string; clientSecret: string };
  const issued = await requestToken(target, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
  assert.equal(issued.status, 200, issued.text);
  return issued.body.access_token as string;
}

describe('TesseraJwtVerifier', () => {
  it('finds the JWKS in the metadata, and gives the principal the store-based verifier gives, for admin, credential and anonymous tokens', async () => {
    const verifier = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock });
    assert.equal(verifier.appId, server.app.appId);
    assert.equal(verifier.jwksUri, `${server.appUrl}/jwks.json`);
    const storeBased = await TesseraVerifier.open({ databaseUrl: server.testStore.databaseUrl });
    try {
      const admin = await adminTokenOf(server);
      const tokens = {
        admin,
        anonymous: await anonymousTokenOf(server),
        credential: await credentialToken(server, admin, {}),
      };
      for (const [name, token] of Object.entries(tokens)) {
        const offline = await verifier.verify(token);
        const stored = await storeBased.authenticate({ appId: server.app.appId, authorization: bearer(token), path: '/principal' });
        // The store keeps an admin token's expiry to the millisecond; `exp` is in seconds.
        assert.equal(offline.expiresAt, Math.floor(stored.expiresAt! / 1000) * 1000, name);
        assert.deepEqual({ ...fieldsOf(offline), expiresAt: 0 }, { ...fieldsOf(stored), expiresAt: 0 }, name);
        assert.equal(offline.expiresAt, decodeJwt(token).exp! * 1000, name);
      }
      const credential = await verifier.verify(tokens.credential);
      assert.deepEqual(credential.scopes, ['events:read', 'reports:read']);
      assert.match(credential.clientId!, /^tcl_/);
      assert.deepEqual(fieldsOf(await verifier.verify(tokens.anonymous)), {
        appId: server.app.appId,
        kind: 'anonymous',
        id: 'ANONYMOUS',
        auth: 'bearer',
        expiresAt: decodeJwt(tokens.anonymous).exp! * 1000,
        scopes: null,
        clientId: null,
      });
      // Checked again: from memory, a value rather than a promise, and a copy of its own.
      const again = verifier.verify(admin);
      assert.ok(!(again instanceof Promise));
      (again as { id: string }).id = 'changed';
      assert.equal((await verifier.verify(admin)).id, server.app.adminId);
    } finally {
      await storeBased.close();
    }
  });

  it('refuses a revoked token once its status list has been fetched again, after its ttl', async () => {
    const verifier = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock });
    const admin = await adminTokenOf(server);
    const other = await adminTokenOf(server);
    const anonymous = await anonymousTokenOf(server);
    const kept = await anonymousTokenOf(server);
    for (const token of [admin, other, anonymous, kept]) await verifier.verify(token);
    assert.equal((await revokeToken(server.appUrl, admin, bearer(other))).status, 200);
    assert.equal((await revokeToken(server.appUrl, anonymous)).status, 200);
    // Until the list is fetched again (its ttl, 1 s here), the copy in memory says they are valid.
    assert.equal((await verifier.verify(admin)).kind, 'admin');
    assert.equal((await verifier.verify(anonymous)).kind, 'anonymous');
    clock.advance(1_001);
    await assertInvalid(verifier, admin, 'the revoked admin token');
    await assertInvalid(verifier, anonymous, 'the revoked anonymous token');
    assert.equal((await verifier.verify(other)).kind, 'admin');
    assert.equal((await verifier.verify(kept)).kind, 'anonymous');
    // A verifier that never saw them refuses them at once.
    const fresh = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock });
    await assertInvalid(fresh, admin, 'the revoked admin token, first seen');
    await assertInvalid(fresh, anonymous, 'the revoked anonymous token, first seen');
  });

  it('refuses forged, foreign, expired and malformed tokens with 401 INVALID_TOKEN, never anything else', async () => {
    const verifier = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock });
    const genuine = await anonymousTokenOf(server);
    const admin = await adminTokenOf(server);
    const { header, claims, claimsPart, signaturePart } = partsOf(genuine);
    const signedByStranger = strangerSigner();
    // Another app of the same server: the same keys and status lists, another issuer, audience and app_id.
    const otherApp = appOn(server, await server.tessera.apps.create('Other app'));
    await useJwts(server, otherApp.appId);
    const foreign = await anonymousTokenOf(otherApp);
    // Signed with the server's own key: only the claims or the header are not as Tessera makes them.
    const key = await server.tessera.jwt.keys.signingKey();
    const signedByServer = (input: string) => sign(null, Buffer.from(input), key.privateKey).toString('base64url');
    const status = claims.status as { status_list: { idx: number; uri: string } };
    const resigned = (changes: Record<string, unknown>) => forged(header, { ...claims, ...changes }, signedByServer);
    assert.equal((await verifier.verify(resigned({}))).kind, 'anonymous', 'signed again as it was, it passes');
    const opaqueApp = await startServer({});
    const opaque = await anonymousTokenOf(opaqueApp);
    await opaqueApp.close();
    const cases: Record<string, string> = {
      ...forgedTokens(genuine, await publicXOf(genuine, verifier.jwksUri), foreign),
      'another typ': forged({ ...header, typ: 'JWT' }, claims, signedByStranger),
      'a header field more': forged({ ...header, jku: 'https://attacker.example/jwks.json' }, claims, signedByServer),
      'a status list elsewhere': resigned({
        status: { status_list: { ...status.status_list, uri: 'https://attacker.example/api/status-lists/0' } },
      }),
      'no status': resigned({ status: undefined }),
      "another app's app_id": resigned({ app_id: otherApp.appId }),
      'no client_id': resigned({ client_id: undefined }),
      'a scope that is not a string': resigned({ sub: server.app.adminId, scope: ['tokens:read'] }),
      'a jti that is not 16 bytes': resigned({ jti: 'abc' }),
      'a header that is not JSON': `eyJ${Buffer.from('{"alg":').toString('base64url')}.${claimsPart}.${signaturePart}`,
      'an opaque token': opaque,
      empty: '',
      'a megabyte': `eyJ${'A'.repeat(1 << 20)}`,
    };
    for (const [name, token] of Object.entries(cases)) await assertInvalid(verifier, token, name);
    // A genuine token, once its exp has passed (by the verifier's clock).
    const later = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock: new FakeClock(clock.now() + 25 * 3_600_000) });
    await assertInvalid(later, admin, 'expired');
    // A genuine token, for another audience than the verifier expects.
    const elsewhere = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock, audience: 'https://api.example.com' });
    await assertInvalid(elsewhere, admin, 'another audience');
    // The other app's own verifier accepts its token, and refuses this app's.
    const otherVerifier = await TesseraJwtVerifier.create({ issuer: otherApp.appUrl, clock });
    assert.equal((await otherVerifier.verify(foreign)).appId, otherApp.appId);
    await assertInvalid(otherVerifier, genuine, "this app's token, to the other app's verifier");
    assert.equal((await verifier.verify(genuine)).kind, 'anonymous', 'the genuine token still passes');
  });

  it('refuses an issuer that is not an app of Tessera, or whose metadata cannot be read', async () => {
    await assert.rejects(TesseraJwtVerifier.create({ issuer: server.baseUrl }), TypeError);
    await assert.rejects(TesseraJwtVerifier.create({ issuer: `${server.baseUrl}/api/apps/nosuchapp` }), /answered 404/);
  });

  it('a status list that cannot be fetched: its copy is used for the grace past its ttl, then 503 SERVICE_UNAVAILABLE', async () => {
    const ownClock = new FakeClock(Date.now());
    const target = await startServer({ clock: ownClock, statusListTtlSeconds: 1 });
    await useJwts(target, target.app.appId);
    const verifier = await TesseraJwtVerifier.create({ issuer: target.appUrl, clock: ownClock, statusListGraceSeconds: 2 });
    const token = await adminTokenOf(target);
    const unseen = await anonymousTokenOf(target);
    assert.equal((await verifier.verify(token)).kind, 'admin');
    await target.close();
    // Past the ttl, within the grace: the list cannot be fetched, and its copy still answers.
    ownClock.advance(1_500);
    assert.equal((await verifier.verify(token)).kind, 'admin');
    // Past the grace: refused, not let through, for a token seen before and for one never seen.
    ownClock.advance(2_000);
    for (const [name, presented] of Object.entries({ token, unseen })) {
      const error = await refusal(() => verifier.verify(presented));
      assert.equal(error.code, 'SERVICE_UNAVAILABLE', `${name}: ${error.message}`);
      assert.equal(error.status, 503);
      assert.equal(error.details.retryAfterSeconds, 2);
    }
    // Keys that cannot be fetched at all: 503 too.
    const keyless = await TesseraJwtVerifier.create({ issuer: target.appUrl, jwksUri: `${target.appUrl}/jwks.json`, clock: ownClock });
    assert.equal((await refusal(() => keyless.verify(token))).code, 'SERVICE_UNAVAILABLE');
  });

  it('through a real Fastify service with tesseraAuth: bearer JWTs only, with the rules and errors of the store-based verifier', async () => {
    const verifier = await TesseraJwtVerifier.create({ issuer: server.appUrl, clock });
    const app = Fastify();
    await app.register(async (scope) => {
      await scope.register(tesseraAuth, { authenticator: verifier });
      scope.get('/api/apps/:appId/principal', async (request) => request.principal);
      scope.get('/api/apps/:appId/users/:userId', async (request) => request.principal);
      scope.get('/api/apps/:appId/admin/report', { onRequest: requireAdmin }, async () => ({ report: 'ok' }));
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = app.server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      const service = `http://127.0.0.1:${address.port}/api/apps/${server.app.appId}`;
      const admin = await adminTokenOf(server);
      const anonymous = await anonymousTokenOf(server);
      const principal = await requestAs(`${service}/principal`, bearer(admin));
      assert.equal(principal.status, 200, principal.text);
      assert.equal(principal.body.kind, 'admin');
      assert.equal(principal.body.id, server.app.adminId);
      assert.equal((await requestAs(`${service}/admin/report`, bearer(admin))).status, 200);
      assert.equal((await requestAs(`${service}/users/me`, bearer(anonymous))).body.kind, 'anonymous');
      assertError(await requestAs(`${service}/admin/report`, bearer(anonymous)), 403, 'ADMIN_REQUIRED');
      assertError(await requestAs(`${service}/users/me`, bearer(admin)), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
      assertError(await requestAs(`${service}/principal`, bearer('x'.repeat(43))), 401, 'INVALID_TOKEN');
      assertError(await requestAs(`${service}/principal`, basic(server.app.appId)), 401, 'INVALID_TOKEN');
      assertError(await requestAs(`${service}/principal`), 401, 'UNAUTHORIZED');
      const otherApp = `http://127.0.0.1:${address.port}/api/apps/0123456789abcdef`;
      assertError(await requestAs(`${otherApp}/principal`, bearer(admin)), 404, 'APP_NOT_FOUND');
    } finally {
      await app.close();
    }
  });

  it('a key retired at once ends its tokens, cached ones too, once the JWKS is due to be read again', async () => {
    const target = await startServer({});
    try {
      await useJwts(target, target.app.appId);
      const verifier = await TesseraJwtVerifier.create({ issuer: target.appUrl, jwksCacheMaxAgeMs: 200 });
      const token = await adminTokenOf(target);
      assert.equal((await verifier.verify(token)).kind, 'admin');
      const { kid } = decodeProtectedHeader(token);
      await target.tessera.jwt.keys.rotate({ aheadMs: 0 });
      await target.tessera.jwt.keys.retire(kid!);
      assert.ok(!(verifier.verify(token) instanceof Promise), 'still from memory');
      await sleep(250);
      await assertInvalid(verifier, token, 'a token of the retired key');
      assert.equal((await verifier.verify(await adminTokenOf(target))).kind, 'admin', 'a token of the new key');
    } finally {
      await target.close();
    }
  });

  it('three key rolls under load: zero failed verifications by jose, oauth4webapi and TesseraJwtVerifier', async () => {
    // The real clock: jose and oauth4webapi keep their JWKS by it.
    const JWKS_CACHE_MS = 1_000;
    const ROLL_AHEAD_MS = 2_500;
    const target = await startServer({ statusListTtlSeconds: 1 });
    try {
      await useJwts(target, target.app.appId);
      const audience = `tessera:app:${target.app.appId}`;
      // The cooldown is long: a key is learnt by reading the JWKS again once it is JWKS_CACHE_MS old, not by its unknown kid.
      const ours = await TesseraJwtVerifier.create({ issuer: target.appUrl, jwksCacheMaxAgeMs: JWKS_CACHE_MS, jwksCooldownMs: 60_000 });
      const joseKeys = createRemoteJWKSet(new URL(ours.jwksUri), { cacheMaxAge: JWKS_CACHE_MS, cooldownDuration: 60_000 });
      const issuer = new URL(target.appUrl);
      const metadata = await oauth.processDiscoveryResponse(
        issuer,
        await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
      );
      // oauth4webapi keeps the JWKS 5 minutes per metadata object: a copy of it every JWKS_CACHE_MS reads it again as often.
      let as = metadata;
      let asSince = Date.now();
      const verifiers: Record<string, (token: string) => Promise<unknown>> = {
        jose: (token) => jwtVerify(token, joseKeys, { issuer: target.appUrl, audience, typ: 'at+jwt' }),
        oauth4webapi: (token) => {
          if (Date.now() - asSince >= JWKS_CACHE_MS) [as, asSince] = [{ ...metadata }, Date.now()];
          const resource = new Request(`${target.baseUrl}/resource`, { headers: { authorization: `Bearer ${token}` } });
          return oauth.validateJwtAccessToken(as, resource, audience, { [oauth.allowInsecureRequests]: true });
        },
        TesseraJwtVerifier: async (token) => ours.verify(token),
      };
      const failures: string[] = [];
      /** Tokens verified by all three, per kid. */
      const verifiedByKid = new Map<string, number>();
      const issued: string[] = [];
      let verifications = 0;
      let running = true;
      const startedAt = Date.now();
      const load = (async () => {
        for (let round = 0; running; round++) {
          const roundStart = Date.now();
          const token = round % 2 === 0 ? await adminTokenOf(target) : await anonymousTokenOf(target);
          issued.push(token);
          // The new token, and one issued before (of an older key, once there are some).
          for (const presented of [token, issued[(round * 7) % issued.length]!]) {
            const kid = decodeProtectedHeader(presented).kid!;
            const outcomes = await Promise.all(
              Object.entries(verifiers).map(([name, verify]) =>
                verify(presented).then(
                  () => true,
                  (error: unknown) => {
                    failures.push(`${name}, a token of ${kid}: ${String(error)}`);
                    return false;
                  },
                ),
              ),
            );
            verifications += outcomes.length;
            if (outcomes.every(Boolean)) verifiedByKid.set(kid, (verifiedByKid.get(kid) ?? 0) + 1);
          }
          await sleep(Math.max(0, 20 - (Date.now() - roundStart)));
        }
      })();
      const kids = [decodeProtectedHeader(await adminTokenOf(target)).kid!];
      try {
        for (let roll = 0; roll < 3; roll++) {
          await sleep(500);
          const pending = (await target.tessera.jwt.keys.rotate({ aheadMs: ROLL_AHEAD_MS })).find((key) => key.state === 'pending')!;
          kids.push(pending.kid);
          // Until tokens of the new key have been verified for a while.
          const deadline = Date.now() + ROLL_AHEAD_MS + 10_000;
          while ((verifiedByKid.get(pending.kid) ?? 0) < 10 && failures.length === 0 && Date.now() < deadline) await sleep(50);
        }
      } finally {
        running = false;
        await load;
      }
      const seconds = (Date.now() - startedAt) / 1000;
      assert.deepEqual(failures, []);
      assert.equal(new Set(kids).size, 4);
      for (const kid of kids) assert.ok((verifiedByKid.get(kid) ?? 0) >= 10, `tokens of ${kid}: ${verifiedByKid.get(kid) ?? 0}`);
      // Several tokens issued per 100 ms, each checked by the three with an older one.
      assert.ok(issued.length / seconds >= 10, `${issued.length} tokens in ${seconds} s`);
      console.log(`# key rolls: ${issued.length} tokens issued and ${verifications} verifications in ${seconds.toFixed(1)} s, none failed`);
    } finally {
      await target.close();
    }
  });
});
