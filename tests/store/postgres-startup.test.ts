import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { currentBuild } from 'tessera-tokens/internal/release.js';
import { migrate, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { postgresRunner } from 'tessera-tokens/internal/store/postgres/runner.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { createPostgresDatabase } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// Opening the PostgreSQL store when its connections are lost at start-up (while it waits for
// another session's migrations), and named statements that fail as through a transaction pooler:
// a clear error or a 503, never a crash, and nothing left open on the server.

/** The migrations' advisory lock (migrations.ts). */
const MIGRATION_LOCK = 7_246_135_001;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The sessions on the database other than `observer`'s own, once those just closed have ended (a
 * backend leaves pg_stat_activity a moment after its client closed the socket): what the code under
 * test left open. Within 5 s.
 */
async function sessionsLeft(observer: pg.Client): Promise<{ pid: number; application_name: string; state: string }[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const { rows } = await observer.query<{ pid: number; application_name: string; state: string }>(
      'SELECT pid, application_name, state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    if (rows.length === 0 || Date.now() > deadline) return rows;
    await sleep(100);
  }
}

/** Waits until `query` says some session of `application_name` waits for the migrations' lock. */
async function waitForLockWaiter(observer: pg.Client): Promise<number> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { rows } = await observer.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND application_name LIKE 'tessera/%' AND query LIKE '%pg_try_advisory_xact_lock%'`,
    );
    if (rows[0] !== undefined) return rows[0].pid;
    await sleep(50);
  }
  throw new Error('no session of Tessera waited for the migrations lock within 10 s');
}

describe('PostgreSQL store at start-up', () => {
  let database: { databaseUrl: string; drop: () => Promise<void> };
  let holder: pg.Client;

  before(async () => {
    database = await createPostgresDatabase();
    holder = new pg.Client({ connectionString: database.databaseUrl });
    await holder.connect();
  });

  after(async () => {
    await holder.end().catch(() => {});
    await database.drop();
  });

  it('makes a new database whole and finalized in one transaction: instances starting together never open it half-made', async () => {
    const fresh = await createPostgresDatabase();
    const observer = new pg.Client({ connectionString: fresh.databaseUrl });
    await observer.connect();
    const version = currentBuild().version;
    // Everything another session could see while the instances migrate: nothing yet, or the whole schema finalized.
    const seen = new Set<string>();
    let opening = true;
    const watching = (async () => {
      while (opening) {
        const seenNow = await observer
          .query<{ migrations: number; finalized: string }>(
            'SELECT (SELECT count(*)::int FROM schema_migrations) AS migrations, (SELECT finalized_release FROM upgrade_state) AS finalized',
          )
          .then(
            ({ rows }) => `${rows[0]!.migrations} migrations, finalized for ${rows[0]!.finalized}`,
            (error: { code?: string }) => (error.code === '42P01' ? 'nothing' : `error ${error.code}`),
          );
        seen.add(seenNow);
      }
    })();
    try {
      const stores = await Promise.all([0, 1, 2].map(() => openPostgresStore(fresh.databaseUrl)));
      opening = false;
      await watching;
      try {
        for (const store of stores) assert.equal(store.upgrade.stateAtOpen?.finalizedRelease, version);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
      const whole = `${POSTGRES_MIGRATIONS.length} migrations, finalized for ${version}`;
      assert.deepEqual(
        [...seen].filter((state) => state !== 'nothing' && state !== whole),
        [],
      );
      assert.ok(seen.has(whole), [...seen].join('; '));
    } finally {
      opening = false;
      await observer.end();
      await fresh.drop();
    }
  });

  it('gives up waiting for a migrations lock held too long, names who holds it, and leaves nothing open', async () => {
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const pool = new pg.Pool({ connectionString: database.databaseUrl, application_name: 'tessera/test', max: 2 });
    const waiting: string[] = [];
    try {
      const started = Date.now();
      await assert.rejects(migrate(pool, { lockWaitMs: 600, onWaiting: (message) => waiting.push(message) }), (error: Error) => {
        assert.match(
          error.message,
          new RegExp(`gave up after \\d+ s waiting for the migrations' lock, which the session of pid ${holderPid}`),
        );
        assert.match(error.message, /pg_terminate_backend/);
        return true;
      });
      assert.ok(Date.now() - started < 5_000, 'the wait was bounded');
      assert.equal(waiting.length, 1, waiting.join('\n'));
      assert.match(waiting[0]!, new RegExp(`^waiting up to \\d+ s for the migrations. lock, which the session of pid ${holderPid} `));
    } finally {
      await pool.end();
      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
    assert.deepEqual(await sessionsLeft(holder), []);
  });

  it('fails with SERVICE_UNAVAILABLE when its connection is terminated while it waits for the migrations, and leaves nothing open', async () => {
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const warnings: string[] = [];
      const opening = openPostgresStore(database.databaseUrl, { onWarning: (message) => warnings.push(message) });
      const outcome = opening.then(
        () => 'opened',
        (error: unknown) => error,
      );
      const waiter = await waitForLockWaiter(holder);
      // The wait is said once the holder is known, a moment after the wait begins: then the cut.
      const saidAt = Date.now();
      while (!warnings.some((warning) => warning.includes("waiting up to 60 s for the migrations' lock")) && Date.now() - saidAt < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await holder.query('SELECT pg_terminate_backend($1)', [waiter]);
      const error = await outcome;
      assert.ok(isServiceUnavailable(error), String(error));
      assert.match((error as Error).message, /^The database cannot be reached \(.+\)\.$/);
      assert.ok(
        warnings.some((warning) => warning.includes("waiting up to 60 s for the migrations' lock")),
        warnings.join('\n'),
      );
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
    assert.deepEqual(await sessionsLeft(holder), []);
  });

  it('tries again while its connection is cut at start-up, and opens once the database is back', async () => {
    const proxy = TcpProxy.toDatabase(database.databaseUrl);
    await proxy.start();
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const warnings: string[] = [];
    try {
      const opening = openPostgresStore(proxy.urlFor(database.databaseUrl), {
        startupRetryMs: 20_000,
        onWarning: (message) => warnings.push(message),
      });
      const outcome = opening.then(
        (store) => store,
        (error: unknown) => error,
      );
      await waitForLockWaiter(holder);
      await proxy.cut();
      await sleep(1_000);
      await proxy.restore();
      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      const store = await outcome;
      assert.ok(!(store instanceof Error), String(store));
      const opened = store as Awaited<typeof opening>;
      try {
        assert.ok(
          warnings.some((warning) => warning.includes('the database cannot be reached at start-up; trying again')),
          warnings.join('\n'),
        );
        assert.equal(await opened.apps.count(), 0);
      } finally {
        await opened.close();
      }
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      await proxy.cut();
    }
    assert.deepEqual(await sessionsLeft(holder), []);
  });

  it('fails after startupRetryMs when the database stays away, saying how long it tried, and leaves nothing open', async () => {
    const proxy = TcpProxy.toDatabase(database.databaseUrl);
    await proxy.start();
    const url = proxy.urlFor(database.databaseUrl);
    await proxy.cut();
    const started = Date.now();
    await assert.rejects(openPostgresStore(url, { startupRetryMs: 1_500, connectTimeoutMs: 500 }), (error: Error) => {
      assert.ok(isServiceUnavailable(error), String(error));
      assert.match(error.message, /^The database cannot be reached \(.*ECONNREFUSED.*, tried for \d+ s\)\.$/);
      return true;
    });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 1_500 && elapsed < 6_000, `gave up after ${elapsed} ms`);
    assert.deepEqual(await sessionsLeft(holder), []);
  });

  it('opens with the change signal down when its LISTEN connection cannot be opened: not taken for a pooler', async () => {
    // A role with one connection: the pool's (PG_POOL_SIZE=1); the LISTEN connection is refused (53300).
    const role = `tessera_one_connection_${process.pid}`;
    await (await openPostgresStore(database.databaseUrl)).close();
    await holder.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1`);
    try {
      await holder.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
      const url = new URL(database.databaseUrl);
      url.username = role;
      const warnings: string[] = [];
      const store = await openPostgresStore(url.toString(), { poolSize: 1, onWarning: (message) => warnings.push(message) });
      try {
        assert.equal(store.changeSignal().up, false);
        assert.ok(
          warnings.some((warning) => warning.startsWith('lost the database notification connection')),
          warnings.join('\n'),
        );
      } finally {
        await store.close();
      }
      assert.deepEqual(await sessionsLeft(holder), []);
    } finally {
      await holder.query(`DROP OWNED BY ${role}`);
      await holder.query(`DROP ROLE ${role}`);
    }
  });

  it('answers 503 to a named statement that already exists on its connection, warns once, and sends statements unnamed from then on', async () => {
    const pool = new pg.Pool({ connectionString: database.databaseUrl, max: 1 });
    const failures: { code: string; message: string }[] = [];
    const sql = postgresRunner(pool, { onNamedStatementsFailed: (error) => failures.push(error) });
    try {
      // As a transaction pooler makes it: another client prepared the same name on this server connection.
      await pool.query('PREPARE "tessera-1" AS SELECT 2');
      await assert.rejects(Promise.resolve(sql.get('SELECT 1 AS one')), (error: unknown) => {
        assert.ok(isServiceUnavailable(error), String(error));
        return true;
      });
      assert.deepEqual(
        failures.map((failure) => failure.code),
        ['42P05'],
      );
      for (let i = 0; i < 3; i++) assert.deepEqual(await sql.get<{ one: number }>('SELECT 1 AS one'), { one: 1 });
      assert.deepEqual(await sql.transaction(async (tx) => tx.get<{ n: number }>('SELECT :n::int AS n', { n: 7 })), { n: 7 });
      assert.equal(failures.length, 1);
    } finally {
      await pool.end();
    }
  });

  it('answers 503 to a named statement bound where another client prepared a different one under its name (08P01)', async () => {
    const pool = new pg.Pool({ connectionString: database.databaseUrl, max: 1 });
    const failures: { code: string; message: string }[] = [];
    const sql = postgresRunner(pool, { onNamedStatementsFailed: (error) => failures.push(error) });
    try {
      assert.deepEqual(await sql.get<{ one: number }>('SELECT 1 AS one'), { one: 1 });
      // As a transaction pooler makes it: this server connection's "tessera-1" is another client's statement.
      await pool.query('DEALLOCATE ALL');
      await pool.query('PREPARE "tessera-1"(int) AS SELECT $1 AS other');
      await assert.rejects(Promise.resolve(sql.get('SELECT 1 AS one')), (error: unknown) => {
        assert.ok(isServiceUnavailable(error), String(error));
        return true;
      });
      assert.deepEqual(
        failures.map((failure) => failure.code),
        ['08P01'],
      );
      assert.deepEqual(await sql.get<{ one: number }>('SELECT 1 AS one'), { one: 1 });
    } finally {
      await pool.end();
    }
  });

  it('answers 503 to a named statement its server connection does not have (26000), never 500', async () => {
    const pool = new pg.Pool({ connectionString: database.databaseUrl, max: 1 });
    const failures: { code: string; message: string }[] = [];
    const sql = postgresRunner(pool, { onNamedStatementsFailed: (error) => failures.push(error) });
    try {
      assert.deepEqual(await sql.get<{ one: number }>('SELECT 1 AS one'), { one: 1 });
      // As a transaction pooler makes it: the next statement goes to a server connection that never prepared it.
      await pool.query('DEALLOCATE ALL');
      await assert.rejects(Promise.resolve(sql.get('SELECT 1 AS one')), (error: unknown) => {
        assert.ok(isServiceUnavailable(error), String(error));
        return true;
      });
      assert.deepEqual(
        failures.map((failure) => failure.code),
        ['26000'],
      );
      assert.deepEqual(await sql.get<{ one: number }>('SELECT 1 AS one'), { one: 1 });
    } finally {
      await pool.end();
    }
  });
});
