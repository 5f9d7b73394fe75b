import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ChangeListener } from 'tessera-tokens/internal/store/postgres/change-listener.js';
import type { StoreChange } from '../../src/store/store.js';
import { createPostgresDatabase } from '../helpers/store.js';

/** The PostgreSQL change signal's heartbeat: a LISTEN connection that hears nothing is found out. */
describe('the change signal proves itself with heartbeats', () => {
  let own: { databaseUrl: string; drop: () => Promise<void> };
  let other: { databaseUrl: string; drop: () => Promise<void> };
  let pool: pg.Pool;
  /** Heartbeats (and the test's own notifications) go through this pool, on the first database. */
  const notify = (payload: string) => pool.query("SELECT pg_notify('tessera_changes', $1)", [payload]);

  before(async () => {
    own = await createPostgresDatabase();
    other = await createPostgresDatabase();
    pool = new pg.Pool({ connectionString: own.databaseUrl, max: 2 });
    // An idle connection of the heartbeats' pool that a termination below ends must not crash the
    // file (an 'error' without a listener): the next heartbeat gets another, as the service's pool does.
    pool.on('error', () => {});
  });
  after(async () => {
    await pool.end();
    await own.drop();
    await other.drop();
  });

  /** While true, heartbeats cannot be sent, as when the database does not answer the pool. */
  let poolDown = false;
  const heartbeat = (payload: string) => (poolDown ? Promise.reject(new Error('the pool cannot reach the database')) : notify(payload));

  function listenerOn(databaseUrl: string, staleLimitMs = 2_000) {
    const warnings: string[] = [];
    const changes: StoreChange[] = [];
    const listener = new ChangeListener(
      () => new pg.Client({ connectionString: databaseUrl }),
      (message) => warnings.push(message),
      heartbeat,
      { intervalMs: 100, timeoutMs: 300, staleLimitMs },
    );
    listener.listeners.push((change) => changes.push(change));
    return { listener, warnings, changes };
  }

  it('hears its heartbeats on the database they are sent to: up, no warning, and no heartbeat told to the caches', async () => {
    const { listener, warnings, changes } = listenerOn(own.databaseUrl);
    await listener.start();
    try {
      assert.equal(listener.hearing, true);
      changes.length = 0;
      await sleep(1_000);
      assert.equal(listener.hearing, true, 'still hearing after ten heartbeats');
      assert.deepEqual(warnings, []);
      assert.deepEqual(changes, [], 'heartbeats are not changes');
      await notify('some-app');
      await sleep(100);
      assert.deepEqual(changes, [{ appId: 'some-app' }]);
    } finally {
      await listener.stop();
    }
  });

  it('counts a LISTEN that hears nothing (on another database) as down: a warning that says why, and caches emptied every 250 ms', async () => {
    const { listener, warnings, changes } = listenerOn(other.databaseUrl);
    await listener.start();
    try {
      assert.equal(listener.hearing, false, 'connected, but deaf');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /lost the database notification connection/);
      changes.length = 0;
      await sleep(1_100);
      assert.ok(changes.length >= 3, `caches told to empty themselves every 250 ms (${changes.length} times)`);
      assert.ok(changes.every((change) => change === 'anything'));
      assert.equal(listener.hearing, false, 'still deaf, however often it reconnects');
      assert.equal(warnings.length, 1, 'one warning for one loss');
    } finally {
      await listener.stop();
    }
  });

  it('heartbeats that cannot be sent: down within an interval and a timeout, caches trusted until PG_STALE_LIMIT_MS after the last one heard, then emptied every 250 ms', async () => {
    const { listener, warnings, changes } = listenerOn(own.databaseUrl, 800);
    await listener.start();
    try {
      assert.equal(listener.hearing, true);
      changes.length = 0;
      poolDown = true;
      const downAt = Date.now();
      await sleep(600);
      assert.equal(listener.hearing, false, 'no heartbeat heard for longer than an interval and a timeout');
      assert.match(listener.signal.problem ?? '', /cannot be sent/);
      assert.deepEqual(changes, [], 'caches still trusted within the bound');
      assert.ok(listener.signal.trustedUntil > Date.now() && listener.signal.trustedUntil <= downAt + 800);
      await sleep(800);
      assert.ok(changes.length >= 2, `caches emptied past the bound, then every 250 ms (${changes.length} times)`);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0]!, /no proof for 800 ms \(PG_STALE_LIMIT_MS\).*cannot be sent/);
      poolDown = false;
      await sleep(300);
      assert.equal(listener.hearing, true, 'heard again once heartbeats can be sent');
      const afterReturn = changes.length;
      await sleep(600);
      assert.equal(changes.length, afterReturn, 'no more emptying once heard again');
      assert.match(warnings.at(-1)!, /is back/);
    } finally {
      poolDown = false;
      await listener.stop();
    }
  });

  it('a LISTEN connection terminated and back within the bound: caches kept meanwhile, emptied once on its return', async () => {
    const { listener, warnings, changes } = listenerOn(own.databaseUrl, 1_500);
    await listener.start();
    try {
      changes.length = 0;
      const terminated = await pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()",
      );
      assert.equal(terminated.rowCount, 1, 'the listener’s connection');
      await sleep(100);
      assert.equal(listener.hearing, false);
      assert.match(listener.signal.problem ?? '', /lost/);
      assert.deepEqual(changes, [], 'nothing emptied at the loss: the last proof still holds');
      await sleep(900);
      assert.equal(listener.hearing, true, 'reconnected and heard');
      assert.deepEqual(changes, ['anything'], 'emptied once: what changed while the new connection was not yet listening');
      assert.match(warnings[0]!, /lost the database notification connection; caches are trusted until 1500 ms \(PG_STALE_LIMIT_MS\)/);
    } finally {
      await listener.stop();
    }
  });
});
