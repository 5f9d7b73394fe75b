import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { CreatedApp } from '../../src/apps/service.js';
import { actorOfEvent } from '../../src/events/event.js';
import { TOKEN_SELECTOR, type Principal } from 'tessera-tokens/internal/principal.js';
import { anonymousRequest, OPERATOR, type RequestContext } from '../../src/request-context.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { NEVER_EXPIRES_IN } from 'tessera-tokens/internal/tokens/expiry.js';
import { codeOf } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { NO_LIMITS } from '../helpers/server.js';
import { createSqliteTestStore, type TestStore } from '../helpers/store.js';

// The issuing and checking services and the Authenticator, called directly over a real SQLite store
// with a fake clock: what the HTTP tests cover through a server, here one step at a time.

const FROM = anonymousRequest('192.0.2.1');

describe('the token services, over a real store with a fake clock', () => {
  let testStore: TestStore;
  let clock: FakeClock;
  let tessera: Tessera;
  let created: CreatedApp;
  let app: AppRecord;

  before(async () => {
    testStore = await createSqliteTestStore();
    clock = new FakeClock();
    tessera = createTessera({ store: testStore.store, clock, rateLimits: NO_LIMITS });
    created = await tessera.apps.create('Services');
    app = await tessera.appCache.require(created.appId);
  });
  after(async () => {
    await tessera.close();
    await testStore.dispose();
  });
  beforeEach(() => {
    clock.time = Date.parse('2026-06-01T00:00:00.000Z');
  });

  const issue = (clientId: string, clientSecret: string, expiresAt: number | null = null, context: RequestContext = FROM) =>
    tessera.issuer.issue(app, { credentials: { clientId, clientSecret }, expiresAt }, context);
  const admin = (expiresAt: number | null = null) => issue(created.clientId, created.clientSecret, expiresAt);
  const anonymous = (expiresAt: number | null = null) => issue(created.appId, created.appKey, expiresAt);
  // `authenticate` answers from memory when it can, and may throw rather than reject: await both.
  const authenticate = async (authorization: string, path = `/api/apps/${created.appId}/whoami`) =>
    tessera.authenticator.authenticate({ appId: created.appId, authorization, path });

  describe('TokenIssuer', () => {
    it('issues an admin token for the ClientID and ClientSecret, and an anonymous one for the AppID', async () => {
      const adminToken = await admin();
      assert.deepEqual(
        { ...adminToken, accessToken: undefined },
        { id: created.adminId, accessToken: undefined, expiresIn: NEVER_EXPIRES_IN, kind: 'admin', scopes: null },
      );
      const anonymousToken = await anonymous();
      assert.equal(anonymousToken.kind, 'anonymous');
      assert.equal(anonymousToken.id, 'ANONYMOUS');
      assert.notEqual(adminToken.accessToken, anonymousToken.accessToken);
    });

    it('counts expires_in from the clock, rounded down', async () => {
      assert.equal((await anonymous(clock.now() + 90_999)).expiresIn, 90);
    });

    it('refuses a wrong secret and an unknown ClientID alike', async () => {
      assert.equal(await codeOf(issue(created.clientId, 'wrong')), 'invalid_client');
      assert.equal(await codeOf(issue('unknown-client', created.clientSecret)), 'invalid_client');
    });

    it('records what it issues and refuses: a refusal as an event with the address of the context, an anonymous token as a count', async () => {
      await tessera.events.flush();
      const before = (await tessera.events.list(created.appId, { limit: 500 })).events.length;
      const countQuery = { per: 'day' as const, since: clock.now() - 86_400_000, until: clock.now() + 1 };
      const countedBefore = (await tessera.events.counts(created.appId, countQuery)).totals;
      const countOf = (totals: typeof countedBefore, type: string, who: string) =>
        totals.find((total) => total.type === type && (total.principal ?? total.attempted) === who)?.count ?? 0;
      await anonymous();
      await codeOf(issue(created.clientId, 'wrong'));
      const events = (await tessera.events.list(created.appId, { limit: 1 })).events;
      assert.equal((await tessera.events.list(created.appId, { limit: 500 })).events.length, before + 1);
      assert.deepEqual(
        events.map(({ type, principal, clientAddress, details }) => ({ type, principal, clientAddress, details })),
        [{ type: 'token.refused', principal: 'admin', clientAddress: '192.0.2.1', details: { reason: 'invalid_client' } }],
      );
      // As recorded, the kind asked for; read, what was attempted, by nobody known.
      assert.deepEqual(actorOfEvent(events[0]!.type, events[0]!.principal), { principal: null, attempted: 'admin' });
      const counted = (await tessera.events.counts(created.appId, countQuery)).totals;
      assert.equal(countOf(counted, 'token.issued', 'anonymous'), countOf(countedBefore, 'token.issued', 'anonymous') + 1);
      assert.equal(countOf(counted, 'token.refused', 'admin'), countOf(countedBefore, 'token.refused', 'admin') + 1);
    });
  });

  describe('TokenIssuer against revocations', () => {
    it('authenticates anew a request authenticated against an app read before a rotation: the old secret is refused, not stored', async () => {
      const stale = await tessera.appCache.require(created.appId);
      const old = { clientId: created.clientId, clientSecret: created.clientSecret };
      const rotated = await tessera.apps.rotateSecret(created.appId, {}, OPERATOR);
      created = { ...created, clientSecret: rotated.clientSecret };
      app = await tessera.appCache.require(created.appId);
      // The old secret matches the record read before the rotation; the insert finds the app changed.
      assert.equal(await codeOf(tessera.issuer.issue(stale, { credentials: old, expiresAt: null }, FROM)), 'invalid_client');
      assert.equal((await admin()).kind, 'admin', 'the new secret works');
    });

    it('answers 503 with Retry-After when revocations win three tries in a row, and stores nothing', async () => {
      const inserts: number[] = [];
      const racing = createTessera({
        store: {
          ...testStore.store,
          tokens: { ...testStore.store.tokens, insert: async (_token, generation) => (inserts.push(generation), undefined) },
        },
        clock,
        rateLimits: NO_LIMITS,
      });
      try {
        const current = await racing.appCache.require(created.appId);
        const refused = racing.issuer.issue(
          current,
          { credentials: { clientId: created.clientId, clientSecret: created.clientSecret }, expiresAt: null },
          FROM,
        );
        await assert.rejects(
          refused,
          (error: { code?: string; status?: number; details?: { retryAfterSeconds?: number } }) =>
            error.code === 'SERVICE_UNAVAILABLE' && error.status === 503 && error.details?.retryAfterSeconds === 1,
        );
        assert.equal(inserts.length, 3);
      } finally {
        // Not closed: it shares the store of the other tests, which closes it.
        await racing.events.flush();
      }
    });
  });

  describe('TokenChecker', () => {
    it('gives the principal of a token of this app, with its selector, and undefined for anything else', async () => {
      const token = await admin();
      const principal = (await tessera.checker.principal(app, token.accessToken)) as Principal;
      assert.deepEqual(
        { ...principal },
        {
          appId: created.appId,
          kind: 'admin',
          id: created.adminId,
          auth: 'bearer',
          expiresAt: null,
          scopes: null,
          clientId: null,
          [TOKEN_SELECTOR]: principal[TOKEN_SELECTOR],
        },
      );
      assert.equal(typeof principal[TOKEN_SELECTOR], 'string');
      assert.deepEqual(JSON.parse(JSON.stringify(principal)), {
        appId: created.appId,
        kind: 'admin',
        id: created.adminId,
        auth: 'bearer',
        expiresAt: null,
        scopes: null,
        clientId: null,
      });
      for (const other of ['', 'not-a-token', `${token.accessToken.slice(0, -2)}AA`, 'A'.repeat(43)]) {
        assert.equal(await tessera.checker.principal(app, other), undefined, other);
      }
    });

    it('refuses a token from the instant it expires, from memory and from the store', async () => {
      const token = await anonymous(clock.now() + 1000);
      assert.notEqual(await tessera.checker.principal(app, token.accessToken), undefined);
      clock.advance(999);
      assert.notEqual(await tessera.checker.principal(app, token.accessToken), undefined);
      clock.advance(1);
      assert.equal(await tessera.checker.principal(app, token.accessToken), undefined);
      tessera.checker.forgetAll();
      assert.equal(await tessera.checker.principal(app, token.accessToken), undefined);
      assert.equal(await tessera.checker.introspect(app, token.accessToken), undefined);
    });

    it('introspects an active token', async () => {
      const token = await anonymous(clock.now() + 60_000);
      assert.deepEqual(await tessera.checker.introspect(app, token.accessToken), {
        appId: created.appId,
        kind: 'anonymous',
        id: 'ANONYMOUS',
        clientId: created.appId,
        issuedAt: clock.now(),
        expiresAt: clock.now() + 60_000,
        scopes: null,
      });
    });

    it('refuses a token of another app', async () => {
      const other = await tessera.apps.create('Other');
      const otherApp = await tessera.appCache.require(other.appId);
      const token = await anonymous();
      assert.equal(await tessera.checker.principal(otherApp, token.accessToken), undefined);
      assert.equal(await tessera.checker.match(otherApp, token.accessToken), undefined);
    });
  });

  describe('TokenRevoker', () => {
    it('lets a token revoke itself, a caller of the app any anonymous token it holds, and an admin any token; the next check refuses it', async () => {
      const own = await anonymous();
      const caller = await authenticate(`Bearer ${own.accessToken}`);
      const adminToken = await admin();
      assert.equal(
        await codeOf(tessera.revoker.revoke(app, adminToken.accessToken, { clientAddress: null, by: caller })),
        'ADMIN_REQUIRED',
      );
      assert.notEqual(await tessera.checker.principal(app, adminToken.accessToken), undefined);
      assert.equal(await codeOf(tessera.revoker.revoke(app, own.accessToken, { clientAddress: null, by: null })), 'ADMIN_REQUIRED');
      const held = await anonymous();
      await tessera.revoker.revoke(app, held.accessToken, { clientAddress: null, by: caller });
      assert.equal(await tessera.checker.principal(app, held.accessToken), undefined);
      await tessera.revoker.revoke(app, own.accessToken, { clientAddress: null, by: caller });
      assert.equal(await tessera.checker.principal(app, own.accessToken), undefined);
      const victim = await anonymous();
      const adminCaller = await authenticate(`Bearer ${(await admin()).accessToken}`);
      await tessera.revoker.revoke(app, victim.accessToken, { clientAddress: null, by: adminCaller });
      assert.equal(await tessera.checker.principal(app, victim.accessToken), undefined);
      await tessera.revoker.revoke(app, adminToken.accessToken, { clientAddress: null, by: adminCaller });
      assert.equal(await tessera.checker.principal(app, adminToken.accessToken), undefined);
    });

    it('revokes all tokens of a kind for the operator', async () => {
      const adminToken = await admin();
      const anonymousToken = await anonymous();
      assert.ok((await tessera.revoker.revokeAll(created.appId, 'admin', OPERATOR)).revoked >= 1);
      assert.equal(await tessera.checker.principal(app, adminToken.accessToken), undefined);
      assert.notEqual(await tessera.checker.principal(app, anonymousToken.accessToken), undefined);
    });
  });

  describe('Authenticator', () => {
    it('resolves the three modes', async () => {
      const basic = `Basic ${Buffer.from(`${created.appId}:x`).toString('base64')}`;
      assert.deepEqual(await authenticate(basic), {
        appId: created.appId,
        kind: 'anonymous',
        id: 'ANONYMOUS',
        auth: 'basic',
        expiresAt: null,
        scopes: null,
        clientId: null,
      });
      assert.equal((await authenticate(`Bearer ${(await anonymous()).accessToken}`)).kind, 'anonymous');
      assert.equal((await authenticate(`Bearer ${(await admin()).accessToken}`)).kind, 'admin');
    });

    it("answers the contract's errors", async () => {
      const adminToken = (await admin()).accessToken;
      assert.equal(await codeOf(authenticate('Bearer nope')), 'INVALID_TOKEN');
      assert.equal(await codeOf(authenticate('Digest x')), 'UNAUTHORIZED');
      assert.equal(await codeOf(authenticate(`Bearer ${adminToken}`, `/api/apps/${created.appId}/users/ME`)), 'ME_NOT_ALLOWED_FOR_ADMIN');
      const unknownApp = (async () =>
        tessera.authenticator.authenticate({ appId: '0000000000000000', authorization: 'Bearer x', path: '/' }))();
      assert.equal(await codeOf(unknownApp), 'APP_NOT_FOUND');
      const anonymousToken = (await anonymous()).accessToken;
      const adminOnly = (async () =>
        tessera.authenticator.authenticate({
          appId: created.appId,
          authorization: `Bearer ${anonymousToken}`,
          path: '/x',
          adminRequired: true,
        }))();
      assert.equal(await codeOf(adminOnly), 'ADMIN_REQUIRED');
    });
  });
});
