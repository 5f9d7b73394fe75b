import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import type { AppConfiguration } from 'tessera-tokens/internal/apps/app.js';
import { openPool } from 'tessera-tokens/internal/store/postgres/connection.js';
import { postgresRunner } from 'tessera-tokens/internal/store/postgres/runner.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { makeApp, makeCredential, makeToken } from '../helpers/fixtures.js';
import { createPostgresDatabase, createPostgresTestStore } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { assertMigratedEvents, eventsBeforeMigration4 } from './events-before-migration-4.js';
import { storeSuite } from './store-suite.js';
import { changeConfiguration, revokeAll } from '../helpers/composed.js';

storeSuite('postgres', createPostgresTestStore);

describe('PostgreSQL store specifics', () => {
  it('a token insert that waits on a revocation of its app inserts nothing; a revocation that waits on a token insert removes its token', async () => {
    const testStore = await createPostgresTestStore();
    const { store } = testStore;
    const app = makeApp();
    await store.apps.insert(app);
    const other = new pg.Client({ connectionString: testStore.databaseUrl });
    await other.connect();
    const waitingOnLock = async (what: string) => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const result = await other.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", [`${what}%`]);
        if ((result.rowCount ?? 0) > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.fail(`nothing waited: ${what}`);
    };
    const locker = new pg.Client({ connectionString: testStore.databaseUrl });
    await locker.connect();
    try {
      // A revocation holds the app's row (withdrawAdminGrants) when the insert comes: it waits, then inserts nothing.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM apps WHERE app_id = $1 FOR UPDATE', [app.appId]);
      await locker.query('UPDATE apps SET admin_generation = admin_generation + 1 WHERE app_id = $1', [app.appId]);
      const late = makeToken(app.appId, { kind: 'admin' });
      const inserting = store.tokens.insert(late, 0);
      await waitingOnLock('INSERT INTO tokens');
      await locker.query('COMMIT');
      assert.equal(await inserting, undefined, 'the insert found the generation changed');
      assert.equal(await store.tokens.findBySelector(late.selector), undefined);

      // An insert holds the app's row (FOR KEY SHARE, not committed yet) when the revocation comes:
      // the revocation waits for it, then removes its token with the others.
      await locker.query('BEGIN');
      const early = makeToken(app.appId, { kind: 'admin' });
      const inserted = await locker.query(
        `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
         SELECT $1, $2, apps.app_id, 'admin', $3, NULL FROM apps WHERE app_id = $4 AND admin_generation = 1 FOR KEY SHARE OF apps`,
        [early.selector, early.verifierHash, early.issuedAt, app.appId],
      );
      assert.equal(inserted.rowCount, 1);
      const revoking = revokeAll(store, app.appId, 'admin', Date.now(), () => []);
      await waitingOnLock("SELECT set_config('tessera.withdrawn'");
      await locker.query('COMMIT');
      assert.equal(await revoking, 1, 'the revocation removed the token whose insert it waited for');
      assert.equal(await store.tokens.findBySelector(early.selector), undefined);
      assert.equal((await store.apps.findById(app.appId))?.adminGeneration, 2);
    } finally {
      await Promise.all([other.end(), locker.end()]);
      await testStore.dispose();
    }
  });

  it('counts the rotations and revoke-alls release 0.1.0 makes in the admin generation, once, and a token insert waits for them', async () => {
    const testStore = await createPostgresTestStore();
    const { store } = testStore;
    const app = makeApp();
    await store.apps.insert(app);
    const generation = async () => (await store.apps.findById(app.appId))!.adminGeneration;
    // Release 0.1.0's own statements (src/store/postgres/apps.ts and tokens.ts of its commit).
    const legacy = new pg.Client({ connectionString: testStore.databaseUrl, application_name: 'tessera' });
    await legacy.connect();
    try {
      await legacy.query('UPDATE apps SET client_secret_hash = $2 WHERE app_id = $1', [app.appId, randomBytes(32)]);
      assert.equal(await generation(), 1, 'a rotation');
      await legacy.query('UPDATE apps SET configuration = configuration || $2::jsonb WHERE app_id = $1', [app.appId, '{}']);
      assert.equal(await generation(), 1, 'a configuration change takes nothing away');

      await store.tokens.insert(makeToken(app.appId, { kind: 'anonymous' }), 1);
      await legacy.query('DELETE FROM tokens WHERE app_id = $1 AND kind = $2', [app.appId, 'anonymous']);
      assert.equal(await generation(), 1, 'removing anonymous tokens takes no admin authority away');
      await store.tokens.insert(makeToken(app.appId, { kind: 'admin' }), 1);
      await legacy.query('DELETE FROM tokens WHERE app_id = $1 AND kind = $2', [app.appId, 'admin']);
      assert.equal(await generation(), 2, 'a revoke-all of admin tokens');
      await store.tokens.insert(makeToken(app.appId, { kind: 'admin', expiresAt: 1 }), 2);
      assert.equal(await store.tokens.deleteExpired(Date.now(), 100), 1);
      assert.equal(await generation(), 2, "housekeeping's removal of expired tokens takes nothing away");
      await revokeAll(store, app.appId, 'admin', Date.now(), () => []);
      assert.equal(await generation(), 3, "this release's own revoke-all counts once");

      // A token request authenticated before 0.1.0's rotation waits for it, then stores nothing.
      await legacy.query('BEGIN');
      await legacy.query('UPDATE apps SET client_secret_hash = $2 WHERE app_id = $1', [app.appId, randomBytes(32)]);
      const late = makeToken(app.appId, { kind: 'admin' });
      const inserting = store.tokens.insert(late, 3);
      const other = new pg.Client({ connectionString: testStore.databaseUrl });
      await other.connect();
      try {
        for (let attempt = 0; ; attempt++) {
          const waiting = await other.query(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO tokens%'",
          );
          if ((waiting.rowCount ?? 0) > 0) break;
          assert.ok(attempt < 100, 'the insert waited for the rotation');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await other.end();
      }
      await legacy.query('COMMIT');
      assert.equal(await inserting, undefined);
      assert.equal(await generation(), 4);
    } finally {
      await legacy.end();
      await testStore.dispose();
    }
  });

  it("a credential's creation whose connection is terminated while it waits answers 503, and stores nothing", async () => {
    const testStore = await createPostgresTestStore();
    const app = makeApp();
    await testStore.store.apps.insert(app);
    const admin = new pg.Client({ connectionString: testStore.databaseUrl });
    const locker = new pg.Client({ connectionString: testStore.databaseUrl });
    await Promise.all([admin.connect(), locker.connect()]);
    try {
      // Another transaction holds the app's row: the creation waits for it (it counts the app's
      // credentials under that lock), and is terminated there.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM apps WHERE app_id = $1 FOR UPDATE', [app.appId]);
      // As `CredentialService.create` composes it.
      const creating = testStore.store.transaction(async (tx) => {
        if ((await tx.apps.lock(app.appId, 'NO KEY UPDATE')) === undefined) throw new Error('no app');
        await tx.credentials.countOf(app.appId);
        await tx.credentials.insert(makeCredential(app.appId));
      });
      const refused = assert.rejects(
        creating,
        (error: { code?: string; status?: number }) => error.code === 'SERVICE_UNAVAILABLE' && error.status === 503,
      );
      let pid: number | undefined;
      for (let attempt = 0; attempt < 100 && pid === undefined; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const result = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT 1 AS found FROM apps%'",
        );
        pid = result.rows[0]?.pid;
      }
      assert.ok(pid !== undefined, 'the creation never waited on the app');
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await refused;
      await locker.query('COMMIT');
      assert.deepEqual((await testStore.store.apps.findById(app.appId))?.credentials, [], 'nothing was stored');
      await testStore.store.credentials.insert(makeCredential(app.appId));
      assert.equal((await testStore.store.apps.findById(app.appId))?.credentials.length, 1, 'the store works on');
    } finally {
      await Promise.all([admin.end(), locker.end()]);
      await testStore.dispose();
    }
  });

  it("a configuration change whose connection is terminated while it waits on the app's row answers 503, and changes nothing", async () => {
    const testStore = await createPostgresTestStore();
    const app = makeApp();
    await testStore.store.apps.insert(app);
    const addOrigin = (current: AppConfiguration) => ({ allowedOrigins: [...current.allowedOrigins, 'http://localhost:5173'] });
    const admin = new pg.Client({ connectionString: testStore.databaseUrl });
    const locker = new pg.Client({ connectionString: testStore.databaseUrl });
    await Promise.all([admin.connect(), locker.connect()]);
    try {
      // Another transaction holds the app's row: the change waits for it, and is terminated there.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM apps WHERE app_id = $1 FOR UPDATE', [app.appId]);
      const changing = changeConfiguration(testStore.store, app.appId, addOrigin, () => []);
      const refused = assert.rejects(
        changing,
        (error: { code?: string; status?: number }) => error.code === 'SERVICE_UNAVAILABLE' && error.status === 503,
      );
      let pid: number | undefined;
      for (let attempt = 0; attempt < 100 && pid === undefined; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const result = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR NO KEY UPDATE OF apps%'",
        );
        pid = result.rows[0]?.pid;
      }
      assert.ok(pid !== undefined, 'the change never waited on the app');
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await refused;
      await locker.query('COMMIT');
      assert.deepEqual((await testStore.store.apps.findById(app.appId))?.configuration.allowedOrigins, [], 'nothing was changed');
      assert.equal((await changeConfiguration(testStore.store, app.appId, addOrigin, () => []))?.changed, true, 'the store works on');
    } finally {
      await Promise.all([admin.end(), locker.end()]);
      await testStore.dispose();
    }
  });

  it('migration 4 keeps every event written before it, and trims refusals apart from the rest', async () => {
    const database = await createPostgresDatabase();
    const appId = 'legacy-events-app';
    try {
      const client = new pg.Client({ connectionString: database.databaseUrl });
      await client.connect();
      try {
        await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
        for (const migration of POSTGRES_MIGRATIONS.filter(({ version }) => version <= 2)) {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [migration.version]);
        }
        for (const event of eventsBeforeMigration4(appId)) {
          await client.query('INSERT INTO events (app_id, type, at, principal, client_address, details) VALUES ($1, $2, $3, $4, $5, $6)', [
            event.appId,
            event.type,
            event.at,
            event.principal,
            event.clientAddress,
            JSON.stringify(event.details),
          ]);
        }
      } finally {
        await client.end();
      }
      const store = await openPostgresStore(database.databaseUrl);
      try {
        await assertMigratedEvents(store, appId);
      } finally {
        await store.close();
      }
    } finally {
      await database.drop();
    }
  });

  it('migration 13 finds the column and unique index an operator built beforehand (CONCURRENTLY), and stops on an index left invalid', async () => {
    const database = await createPostgresDatabase();
    const client = new pg.Client({ connectionString: database.databaseUrl });
    await client.connect();
    try {
      await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
      for (const migration of POSTGRES_MIGRATIONS.filter(({ version }) => version < 13)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [migration.version]);
      }
      // As docs/deployment.md ("Upgrading") has it, first a build that fails (two rows with one key).
      const prepare = 'ALTER TABLE events ADD COLUMN IF NOT EXISTS idempotency_key bytea';
      const build =
        'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS events_by_idempotency_key ON events (idempotency_key) WHERE idempotency_key IS NOT NULL';
      await client.query(prepare);
      await client.query(
        "INSERT INTO events (app_id, type, at, details, idempotency_key) VALUES ('a', 'token.issued', 1, '{}', '\\x01'), ('a', 'token.issued', 2, '{}', '\\x01')",
      );
      await assert.rejects(client.query(build), /could not create unique index/);
      await assert.rejects(
        openPostgresStore(database.databaseUrl),
        /the index events_by_idempotency_key is invalid .*DROP INDEX events_by_idempotency_key, then migrate again/,
      );

      await client.query('DROP INDEX events_by_idempotency_key');
      await client.query('DELETE FROM events WHERE at = 2');
      await client.query(build);
      const store = await openPostgresStore(database.databaseUrl);
      await store.close();
      const { rows } = await client.query<{ version: number }>('SELECT max(version) AS version FROM schema_migrations');
      assert.equal(rows[0]!.version, POSTGRES_MIGRATIONS.at(-1)!.version);
      const inserted = await client.query(
        "INSERT INTO events (app_id, type, at, details, idempotency_key) VALUES ('a', 'token.issued', 3, '{}', '\\x01') ON CONFLICT DO NOTHING",
      );
      assert.equal(inserted.rowCount, 0, 'the index built beforehand is the one that holds');
    } finally {
      await client.end();
      await database.drop();
    }
  });

  it('migrates a new database once when several instances open it at the same moment', async () => {
    const database = await createPostgresDatabase();
    try {
      const stores = await Promise.all(Array.from({ length: 5 }, () => openPostgresStore(database.databaseUrl)));
      await Promise.all(stores.map((store) => store.close()));
      const client = new pg.Client({ connectionString: database.databaseUrl });
      await client.connect();
      const versions = (await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
      await client.end();
      assert.deepEqual(
        versions.map((row) => row.version),
        POSTGRES_MIGRATIONS.map((migration) => migration.version),
      );
    } finally {
      await database.drop();
    }
  });

  it("opens an up-to-date database with a role that may only read (another service's verifier)", async () => {
    const database = await createPostgresDatabase();
    const role = `tessera_reader_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new pg.Client({ connectionString: database.databaseUrl });
    await admin.connect();
    try {
      const writer = await openPostgresStore(database.databaseUrl);
      const app = makeApp();
      await writer.apps.insert(app);
      await writer.close();
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
      await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      const url = new URL(database.databaseUrl);
      url.username = role;
      const reader = await openPostgresStore(url.toString());
      try {
        assert.deepEqual(await reader.apps.findById(app.appId), app);
        await assert.rejects(reader.apps.insert(makeApp()), /permission denied/);
      } finally {
        await reader.close();
      }
    } finally {
      await dropWithRole(admin, database, role);
    }
  });

  it('refuses to open, naming the grant, as a role that may not read schema_migrations, rather than migrating again', async () => {
    const database = await createPostgresDatabase();
    const role = `tessera_blind_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new pg.Client({ connectionString: database.databaseUrl });
    await admin.connect();
    try {
      await (await openPostgresStore(database.databaseUrl)).close();
      const versions = async () => (await admin.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
      const before = await versions();
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
      await admin.query(`REVOKE ALL ON schema_migrations FROM ${role}`);
      const url = new URL(database.databaseUrl);
      url.username = role;
      await assert.rejects(
        openPostgresStore(url.toString()),
        /may not read schema_migrations \(permission denied.*Grant it SELECT on schema_migrations/,
      );
      assert.deepEqual(await versions(), before);
    } finally {
      await dropWithRole(admin, database, role);
    }
  });

  it('answers 503 SERVICE_UNAVAILABLE, not a hang, while the database is unreachable, and recovers by itself', async () => {
    const database = await createPostgresDatabase();
    const proxy = TcpProxy.toDatabase(database.databaseUrl);
    await proxy.start();
    const store = await openPostgresStore(proxy.urlFor(database.databaseUrl), { connectTimeoutMs: 500, queryTimeoutMs: 1_000 });
    try {
      await store.apps.count();
      await proxy.cut();
      for (const operation of [async () => store.apps.findById('0123456789abcdef'), () => store.apps.count(), () => store.ping()]) {
        const started = Date.now();
        await assert.rejects(operation(), (error: { code?: string; status?: number; details?: { retryAfterSeconds?: number } }) => {
          assert.equal(error.code, 'SERVICE_UNAVAILABLE');
          assert.equal(error.status, 503);
          assert.ok((error.details?.retryAfterSeconds ?? 0) > 0);
          return true;
        });
        assert.ok(Date.now() - started < 3_000, 'answered within the timeouts');
      }
      await proxy.restore();
      const deadline = Date.now() + 5_000;
      for (;;) {
        try {
          await store.ping();
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      assert.equal(await store.apps.count(), 0);
    } finally {
      await store.close();
      await proxy.cut();
      await database.drop();
    }
  });

  it('a write that reaches a read-only server (a standby, a primary still being promoted: 25006) answers 503 and drops the connection; the next work gets another', async () => {
    const database = await createPostgresDatabase();
    const name = new URL(database.databaseUrl).pathname.slice(1);
    const admin = new pg.Client({ connectionString: database.databaseUrl });
    await admin.connect();
    await admin.query('CREATE TABLE written (n integer)');
    // Every new connection is read-only, as on a server in recovery.
    await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    const { pool } = openPool(database.databaseUrl, { poolSize: 1 }, () => {});
    const db = postgresRunner(pool);
    const unavailable = (error: { code?: string; status?: number; details?: { retryAfterSeconds?: number } }) =>
      error.code === 'SERVICE_UNAVAILABLE' && error.status === 503 && (error.details?.retryAfterSeconds ?? 0) > 0;
    try {
      await assert.rejects(async () => db.run('INSERT INTO written VALUES (1)'), unavailable);
      assert.equal(pool.totalCount, 0, 'the statement left its read-only connection in the pool');
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.run('LOCK TABLE written IN SHARE ROW EXCLUSIVE MODE');
          await tx.run('INSERT INTO written VALUES (2)');
        }),
        unavailable,
      );
      assert.equal(pool.totalCount, 0, 'the transaction left its read-only connection in the pool');

      // The primary is back (here: the database writable again): the next connection writes.
      await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = off`);
      assert.equal(await db.transaction(async (tx) => tx.run('INSERT INTO written VALUES (3)')), 1);
      assert.equal(await db.run('INSERT INTO written VALUES (4)'), 1);
      assert.deepEqual((await admin.query<{ n: number }>('SELECT n FROM written ORDER BY n')).rows, [{ n: 3 }, { n: 4 }]);
    } finally {
      await pool.end();
      await admin.end();
      await database.drop();
    }
  });

  it('a transaction whose connection is terminated (pg_terminate_backend) answers 503; the connection is destroyed, and the next work gets another', async () => {
    const database = await createPostgresDatabase();
    const warnings: unknown[] = [];
    // One connection only: the work after the failure can have no other than a new one.
    const { pool } = openPool(database.databaseUrl, { poolSize: 1 }, (message, error) => warnings.push({ message, error }));
    const db = postgresRunner(pool);
    const removed: pg.Client[] = [];
    pool.on('remove', (client) => removed.push(client));
    // pg-pool tells of a removal once the connection has ended, a moment after the rejection: waited for, up to 2 s.
    const removals = async (count: number) => {
      for (let waited = 0; removed.length < count && waited < 2_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    // The connection the last transaction was given.
    let used: pg.PoolClient | undefined;
    pool.on('acquire', (client) => (used = client));
    const admin = new pg.Client({ connectionString: database.databaseUrl });
    await admin.connect();
    const unavailable = (error: { code?: string; status?: number }) => error.code === 'SERVICE_UNAVAILABLE' && error.status === 503;
    const terminate = (pid: number) => admin.query('SELECT pg_terminate_backend($1)', [pid]);
    try {
      // Between two statements: the connection's 'error' comes while it is checked out and idle.
      await assert.rejects(
        db.transaction(async (tx) => {
          const pid = (await tx.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!.pid;
          await terminate(pid);
          await new Promise((resolve) => setTimeout(resolve, 200));
          await tx.get('SELECT 1');
        }),
        unavailable,
      );
      await removals(1);
      assert.deepEqual(removed, [used], 'the terminated connection was removed from the pool');
      assert.deepEqual(warnings, [
        {
          message: 'a database connection failed; the pool opens another when needed',
          error: { code: '57P01', message: 'terminating connection due to administrator command' },
        },
      ]);

      // During a statement (waiting on a lock the test holds).
      await admin.query('CREATE TABLE held (n integer)');
      const locker = new pg.Client({ connectionString: database.databaseUrl });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE held IN ACCESS EXCLUSIVE MODE');
        const waiting = db.transaction(async (tx) => {
          await tx.run('INSERT INTO held VALUES (1)');
        });
        // Its rejection may come before `terminate` is answered: watched from now on.
        const refused = assert.rejects(waiting, unavailable);
        let pid: number | undefined;
        for (let attempt = 0; attempt < 100 && pid === undefined; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          const result = await admin.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO held%'",
          );
          pid = result.rows[0]?.pid;
        }
        assert.ok(pid !== undefined, 'the transaction never waited on the lock');
        await terminate(pid);
        await refused;
        await locker.query('COMMIT');
      } finally {
        await locker.end();
      }
      await removals(2);
      assert.equal(removed.length, 2);
      assert.equal(removed[1], used);

      // The pool works on: a transaction and a statement, on a connection of its own.
      assert.equal(await db.transaction(async (tx) => tx.run('INSERT INTO held VALUES (2)')), 1);
      assert.equal((await db.get<{ n: string }>('SELECT count(*)::text AS n FROM held'))!.n, '1');
      assert.equal(pool.totalCount, 1);
    } finally {
      await pool.end();
      await admin.end();
      await database.drop();
    }
  });
});

/** Drops what `role` owns, ends `admin` (connected to the database), drops the database, then the role. */
async function dropWithRole(admin: pg.Client, database: { databaseUrl: string; drop(): Promise<void> }, role: string): Promise<void> {
  await admin.query(`DROP OWNED BY ${role}`).catch(() => {});
  await admin.end();
  await database.drop();
  const cleanup = new pg.Client({ connectionString: database.databaseUrl.replace(/\/[^/]*$/, '/test') });
  await cleanup.connect();
  await cleanup.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
  await cleanup.end();
}
