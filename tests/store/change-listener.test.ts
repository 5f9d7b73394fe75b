import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ChangeListener } from '../../src/store/postgres/change-listener.js';
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
  });
  after(async () => {
    await pool.end();
    await own.drop();
    await other.drop();
  });

  function listenerOn(databaseUrl: string) {
    const warnings: string[] = [];
    const changes: StoreChange[] = [];
    const listener = new ChangeListener(
      () => new pg.Client({ connectionString: databaseUrl }),
      (message) => warnings.push(message),
      notify,
      {
        intervalMs: 100,
        timeoutMs: 300,
      },
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
});
