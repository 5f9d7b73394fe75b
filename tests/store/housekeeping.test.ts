import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { EventLog } from '../../src/events/log.js';
import { Housekeeping } from '../../src/housekeeping.js';
import { anonymousRequest } from '../../src/request-context.js';
import { FakeClock } from '../helpers/clock.js';
import { makeApp, makeEvent, makeToken } from '../helpers/fixtures.js';
import { createPostgresTestStore, createSqliteTestStore, type TestStore } from '../helpers/store.js';

const DAY = 86_400_000;

for (const [backend, open] of [['sqlite', createSqliteTestStore], ['postgres', createPostgresTestStore]] as const) {
  describe(`Housekeeping (${backend})`, () => {
    let testStore: TestStore;
    let clock: FakeClock;
    let events: EventLog;
    let housekeeping: Housekeeping;

    beforeEach(async () => {
      testStore = await open();
      clock = new FakeClock();
      events = new EventLog(testStore.store.events, clock);
      housekeeping = new Housekeeping(testStore.store, events, clock, { intervalMs: 60_000, eventRetentionMs: 7 * DAY, maxEventsPerApp: 50 });
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
      await Promise.all([...expired, ...kept].map((token) => store.tokens.insert(token)));

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
      assert.deepEqual((await store.revokedTokens.since(0, 10)).map((one) => one.id), kept.map((one) => one.id));
    });

    it('removes events past their retention, and trims apps with new events to the newest ones', async () => {
      const { store } = testStore;
      const now = clock.now();
      await store.events.append([makeEvent('quiet-app', { at: now - 8 * DAY })]);
      await store.events.append([makeEvent('quiet-app', { at: now - 6 * DAY })]);
      // 80 events of a busy app, recorded through the log so housekeeping knows to trim it
      for (let i = 0; i < 80; i++) events.record('token.refused', 'busy-app', anonymousRequest('198.51.100.1'), 'admin', { n: i });
      await waitFor(async () => (await store.events.list({ appId: 'busy-app', limit: 100 })).length === 80);

      const report = await housekeeping.run();
      assert.equal(report.events, 1 + 30);
      const quiet = await store.events.list({ appId: 'quiet-app', limit: 10 });
      assert.deepEqual(quiet.map((event) => event.at), [now - 6 * DAY]);
      const busy = await store.events.list({ appId: 'busy-app', limit: 100 });
      assert.equal(busy.length, 50);
      assert.deepEqual(busy.map((event) => event.details.n), Array.from({ length: 50 }, (_, i) => 79 - i));
      assert.deepEqual(await housekeeping.run(), { expiredTokens: 0, expiredRevocations: 0, events: 0 });
    });
  });
}

async function waitFor(ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!(await ready())) {
    if (Date.now() > deadline) assert.fail('not ready in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
