import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { replayClaim, SERIALS_PER_BLOCK } from '../../src/attestation/store.js';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { EventLog } from '../../src/events/log.js';
import { Housekeeping } from '../../src/housekeeping.js';
import { anonymousRequest } from '../../src/request-context.js';
import { FakeClock } from '../helpers/clock.js';
import { makeApp, makeDeveloper, makeEvent, makeInvitation, makePasswordLink, makeSession, makeToken } from '../helpers/fixtures.js';
import { createPostgresTestStore, createSqliteTestStore, type TestStore } from '../helpers/store.js';
import { insertSession, rotateClientSecret } from '../helpers/composed.js';

const DAY = 86_400_000;
/** The part of a report about developers' sessions, links and account events, and once claims, when there were none. */
const NOTHING_OF_DEVELOPERS = {
  expiredSessions: 0,
  expiredLinks: 0,
  developerEvents: 0,
  expiredOnceClaims: 0,
  expiredAttestationClaims: 0,
  expiredStatus: 0,
  jwtKeys: 0,
  jwtKeyRotated: false,
  staleAlerts: 0,
  alertNotices: 0,
  finishedMail: 0,
};
/** A report of a pass that removed nothing. */
const NOTHING = { expiredTokens: 0, expiredRevocations: 0, events: 0, eventCounts: 0, countWriters: 0, ...NOTHING_OF_DEVELOPERS };

for (const [backend, open] of [
  ['sqlite', createSqliteTestStore],
  ['postgres', createPostgresTestStore],
] as const) {
  describe(`Housekeeping (${backend})`, () => {
    let testStore: TestStore;
    let clock: FakeClock;
    let events: EventLog;
    let housekeeping: Housekeeping;

    beforeEach(async () => {
      testStore = await open();
      clock = new FakeClock();
      events = new EventLog(testStore.store.events, clock);
      housekeeping = new Housekeeping(testStore.store, events, clock, {
        intervalMs: 60_000,
        eventRetentionMs: 7 * DAY,
        maxEventsPerApp: 50,
        maxRefusalsPerApp: 30,
        jwtKeyRotationMs: 0,
      });
    });
    afterEach(async () => {
      await housekeeping.stop();
      await testStore.dispose();
    });

    it('removes expired tokens, and keeps valid ones and ones that never expire', async () => {
      const { store } = testStore;
      const app = makeApp();
      await store.apps.insert(app);
      const now = clock.now();
      const expired = Array.from({ length: 2_500 }, (_, i) => makeToken(app.appId, { expiresAt: now - 1 - i }));
      const kept = [makeToken(app.appId, { expiresAt: now + 1 }), makeToken(app.appId, { expiresAt: null })];
      await Promise.all([...expired, ...kept].map((token) => store.tokens.insert(token, 0)));

      // It yields between batches: other work runs before it is done.
      let ranMeanwhile = false;
      const run = housekeeping.run();
      setImmediate(() => (ranMeanwhile = true));
      const report = await run;
      assert.equal(report.expiredTokens, 2_500);
      assert.ok(ranMeanwhile, 'housekeeping let other work run');
      for (const token of expired.slice(0, 50)) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
      for (const token of kept) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
    });

    it('removes the revocations of anonymous tokens that have expired, and keeps the others', async () => {
      const { store } = testStore;
      const now = clock.now();
      const revocation = (expiresAt: number | null) => ({ id: randomBytes(16).toString('latin1'), appId: 'some-app', expiresAt });
      const expired = Array.from({ length: 1_200 }, (_, i) => revocation(now - i));
      const kept = [revocation(now + 1), revocation(null)];
      for (const one of [...expired, ...kept]) await store.revokedTokens.add(one);
      const report = await housekeeping.run();
      assert.equal(report.expiredRevocations, 1_200);
      assert.deepEqual(
        (await store.revokedTokens.since(0, 10)).map((one) => one.id),
        kept.map((one) => one.id),
      );
    });

    it('removes events past their retention, and trims each class of the apps with new events to its own cap', async () => {
      const { store } = testStore;
      const now = clock.now();
      await store.events.append([makeEvent('quiet-app', { at: now - 8 * DAY })]);
      await store.events.append([makeEvent('quiet-app', { at: now - 6 * DAY })]);
      // A busy app's events, recorded through the log so housekeeping knows to trim it: 20 audit
      // events among 80 refusals and 80 anonymous tokens (counted only).
      const from = anonymousRequest('198.51.100.1');
      for (let i = 0; i < 80; i++) {
        if (i % 4 === 0) events.record('token.issued', 'busy-app', from, 'admin', { n: i });
        events.record('token.refused', 'busy-app', from, 'admin', { reason: 'invalid_client', n: i });
        events.record('token.issued', 'busy-app', from, 'anonymous', { n: i });
      }
      await events.flush();
      assert.equal((await store.events.list({ appId: 'busy-app', limit: 500 })).length, 20 + 80);

      const report = await housekeeping.run();
      assert.deepEqual(report, {
        expiredTokens: 0,
        expiredRevocations: 0,
        events: 1 + 50,
        eventCounts: 0,
        countWriters: 0,
        ...NOTHING_OF_DEVELOPERS,
      });
      const quiet = await store.events.list({ appId: 'quiet-app', limit: 10 });
      assert.deepEqual(
        quiet.map((event) => event.at),
        [now - 6 * DAY],
      );
      const refused = await store.events.list({ appId: 'busy-app', type: 'token.refused', limit: 100 });
      assert.deepEqual(
        refused.map((event) => event.details.n),
        Array.from({ length: 30 }, (_, i) => 79 - i),
      );
      const audit = await store.events.list({ appId: 'busy-app', type: 'token.issued', limit: 100 });
      assert.deepEqual(
        audit.map((event) => [event.principal, event.details.n]),
        Array.from({ length: 20 }, (_, i) => ['admin', 76 - 4 * i]),
      );
      assert.deepEqual(await housekeeping.run(), NOTHING);
    });

    it('counts every event it records, and removes counts past the retention', async () => {
      const { store } = testStore;
      const from = anonymousRequest('198.51.100.1');
      for (let i = 0; i < 5; i++) events.record('token.issued', 'counted-app', from, 'anonymous', { expiresAt: null });
      events.record('token.refused', 'counted-app', from, null, { reason: 'invalid_token' });
      clock.advance(8 * DAY);
      events.record('token.issued', 'counted-app', from, 'anonymous', { expiresAt: null });
      await events.flush();
      const counts = () => store.events.listCounts({ appId: 'counted-app', bucketMs: 60_000, since: 0, until: clock.now() + 1 });
      assert.deepEqual(
        (await counts()).map((row) => [row.type, row.principal, row.reason, row.count]),
        [
          ['token.issued', 'anonymous', null, 5],
          ['token.refused', null, 'invalid_token', 1],
          ['token.issued', 'anonymous', null, 1],
        ],
      );

      assert.deepEqual(await housekeeping.run(), {
        expiredTokens: 0,
        expiredRevocations: 0,
        events: 1,
        // Two counts per minute, and the two counts per hour they were summed into.
        eventCounts: 4,
        countWriters: 0,
        ...NOTHING_OF_DEVELOPERS,
      });
      assert.deepEqual(
        (await counts()).map((row) => [row.bucket, row.count]),
        [[clock.now() - (clock.now() % 60_000), 1]],
      );
    });

    it('forgets the writers of counts that wrote none for a day, and keeps the others; one forgotten adds its next batch', async () => {
      const { store } = testStore;
      const from = anonymousRequest('198.51.100.1');
      // Two writers of counts (two instances, say), each with a batch added.
      const quiet = new EventLog(store.events, clock);
      const busy = new EventLog(store.events, clock);
      quiet.record('token.issued', 'counted-app', from, 'anonymous');
      await quiet.flush();
      clock.advance(DAY / 2);
      busy.record('token.issued', 'counted-app', from, 'anonymous');
      await busy.flush();
      const reportOf = (countWriters: number) => ({
        expiredTokens: 0,
        expiredRevocations: 0,
        events: 0,
        eventCounts: 0,
        countWriters,
        ...NOTHING_OF_DEVELOPERS,
      });

      clock.advance(DAY / 2);
      assert.deepEqual(await housekeeping.run(), reportOf(0), 'a day exactly: kept');
      clock.advance(1);
      assert.deepEqual(await housekeeping.run(), reportOf(1), 'the quiet one, past a day');
      assert.deepEqual(await housekeeping.run(), reportOf(0));

      // The quiet writer's next batch makes its row again, and is added.
      quiet.record('token.issued', 'counted-app', from, 'anonymous');
      await quiet.flush();
      const total = async () =>
        (await store.events.listCounts({ appId: 'counted-app', bucketMs: 60_000, since: 0, until: clock.now() + 1 })).reduce(
          (sum, row) => sum + row.count,
          0,
        );
      assert.equal(await total(), 3);
      clock.advance(DAY + 1);
      assert.deepEqual(await housekeeping.run(), reportOf(2));
      await quiet.close();
      await busy.close();
    });

    it("removes expired portal sessions and one-time links, and developers' account events past the retention", async () => {
      const { store } = testStore;
      const now = clock.now();
      const developer = makeDeveloper();
      await store.developers.accounts.insert(developer);
      const app = makeApp();
      await store.apps.insert(app);
      const sessions = [now - 1, now, now + 1].map((expiresAt) => makeSession(developer.id, { expiresAt }));
      const event = (at: number) => ({
        type: 'developer.signed_in' as const,
        developerId: developer.id,
        at,
        actor: 'developer' as const,
        clientAddress: null,
        details: {},
      });
      for (const [index, session] of sessions.entries()) {
        await insertSession(store, session, () => ({ developer: [event(index === 0 ? now - 8 * DAY : now)] }));
      }
      const expiredLink = makePasswordLink(developer.id, { expiresAt: now });
      await store.developers.links.insert(expiredLink);
      const liveInvitation = makeInvitation(app.appId, 'someone@example.com', { expiresAt: now + 1 });
      await store.developers.links.insert(liveInvitation);

      assert.deepEqual(await housekeeping.run(), {
        ...NOTHING_OF_DEVELOPERS,
        expiredTokens: 0,
        expiredRevocations: 0,
        events: 0,
        eventCounts: 0,
        countWriters: 0,
        expiredSessions: 2,
        expiredLinks: 1,
        developerEvents: 1,
      });
      assert.deepEqual(await store.developers.sessions.findById(sessions[2]!.id), sessions[2]);
      assert.deepEqual(await store.developers.links.findById(liveInvitation.id), liveInvitation);
      assert.deepEqual(
        (await store.developers.accounts.listEvents(developer.id, 10)).map((one) => one.at),
        [now, now],
      );
    });

    it('removes the claims of once values kept until now or earlier; a later one still refuses its value', async () => {
      const { store } = testStore;
      const now = clock.now();
      const app = makeApp();
      await store.apps.insert(app);
      const rotate = (value: string, keepUntil: number) =>
        rotateClientSecret(
          store,
          app.appId,
          Buffer.alloc(32, value),
          { revokeAdminTokens: false, previousSecretValidUntil: null, once: { value, keepUntil } },
          () => [],
        );
      await rotate('kept-until-now', now);
      await rotate('kept-until-later', now + 1);
      assert.deepEqual(await housekeeping.run(), { ...NOTHING, expiredOnceClaims: 1 });
      await assert.rejects(rotate('kept-until-later', now + 1), { code: 'CONFLICT' });
      assert.ok(await rotate('kept-until-now', now + 1));
    });

    it('removes the proofs of work accepted whose challenge expired by now; a later one is still refused again', async () => {
      const { store } = testStore;
      const now = clock.now();
      const signature = (digit: string) => digit.repeat(64);
      assert.equal(await store.attestation.claim(replayClaim(signature('a'), now)), true);
      assert.equal(await store.attestation.claim(replayClaim(signature('b'), now + 1)), true);
      assert.equal(await store.attestation.claim(replayClaim(signature('b'), now + 1)), undefined);
      assert.deepEqual(await housekeeping.run(), { ...NOTHING, expiredAttestationClaims: 1 });
      assert.equal(await store.attestation.claim(replayClaim(signature('b'), now + 1)), undefined, 'kept');
      assert.equal(await store.attestation.claim(replayClaim(signature('a'), now)), true, 'removed, so new again');
    });

    it('removes the blocks of serials whose challenges have all expired by now; a later one keeps its bits', async () => {
      const { store } = testStore;
      const now = clock.now();
      const expired = await store.attestation.reserveSerials(now);
      const later = await store.attestation.reserveSerials(now + 1);
      for (const block of [expired, later]) assert.equal(await store.attestation.claimSerial(block * SERIALS_PER_BLOCK), true);
      assert.deepEqual(await housekeeping.run(), { ...NOTHING, expiredAttestationClaims: 1 });
      assert.equal(await store.attestation.claimSerial(later * SERIALS_PER_BLOCK), undefined, 'kept, with its bit');
      assert.equal(await store.attestation.claimSerial(expired * SERIALS_PER_BLOCK + 1), undefined, 'gone: nothing of it is claimed');
    });

    it('removes the status list blocks and revocations whose tokens have all expired, and no other', async () => {
      const { store } = testStore;
      const now = clock.now();
      const first = await store.statusLists.reserveBlock({
        size: 64,
        appId: 'gone',
        kind: 'anonymous',
        reservedAt: now - 10,
        expiresBy: now,
      });
      const kept = await store.statusLists.reserveBlock({ size: 64, appId: 'gone', kind: 'admin', reservedAt: now, expiresBy: now + 1 });
      assert.equal(kept, first + 64, 'blocks follow each other, aligned to their size');
      await store.statusLists.revokeIndex(first + 1, now);
      await store.statusLists.revokeIndex(kept + 1, now + 1);
      const report = await housekeeping.run();
      assert.equal(report.expiredStatus, 2);
      const contents = await store.statusLists.contents(0, 2 ** 17, now);
      assert.deepEqual(contents.revokedIndexes, [kept + 1]);
      assert.deepEqual(contents.revokedBlocks, [{ firstIndex: kept, size: 64 }], 'the app is gone: its block counts as revoked whole');
    });
  });
}
