import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { childrenOfFile, runCli, sleep, startCli, terminate, type CliResult } from '../helpers/fleet.js';
import { REPO_ROOT, startServerProcess, TESSERA_APPLICATION_NAME, TESSERA_MAIN } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// `tessera serve` and the CLI as processes on the real PostgreSQL, their connections terminated
// (pg_terminate_backend, as a switchover does) or cut (a TCP proxy that drops everything, as a
// network or a failed node does) while they start, migrate, or run a command. Each either goes on
// once the database is back or exits non-zero with a message that says what happened: never an
// unhandled 'error' event, a stack trace, a hang, or a connection left open on the server.

const children = childrenOfFile();

/** The migrations' advisory lock (src/store/postgres/migrations.ts). */
const MIGRATION_LOCK = 7_246_135_001;

const options = (databaseUrl: string, env: Record<string, string> = {}) => ({ entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl, env });

/** What a process must never print, whatever the database did. */
function assertNoCrash(output: string): void {
  assert.doesNotMatch(output, /Unhandled|uncaught|\n\s+at .+:\d+:\d+/i, output);
}

/**
 * The sessions on `observer`'s database other than its own, once those of processes that are gone
 * have ended: a backend whose client was cut notices only when it next reads or writes (a backend
 * waiting for a lock, once it has it). Within 5 s.
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

/** Resolves once a session of `applicationName` is open on `observer`'s database; throws after 10 s. */
async function sessionOpened(observer: pg.Client, applicationName: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { rowCount } = await observer.query(
      'SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [applicationName],
    );
    if ((rowCount ?? 0) > 0) return;
    await sleep(50);
  }
  throw new Error(`no session of ${applicationName} within 10 s`);
}

/** The pids of `applicationName`'s sessions once one of them waits for `what` (a lock); throws after 10 s. */
async function waitingSessions(observer: pg.Client, applicationName: string, waitingFor: RegExp): Promise<number[]> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { rows } = await observer.query<{ pid: number; query: string; wait_event_type: string | null }>(
      'SELECT pid, query, wait_event_type FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [applicationName],
    );
    if (rows.some((row) => waitingFor.test(row.query) && (row.wait_event_type === 'Lock' || /advisory/.test(row.query)))) {
      return rows.map((row) => row.pid);
    }
    await sleep(50);
  }
  throw new Error(`no session of ${applicationName} waited for ${waitingFor} within 10 s`);
}

async function exitWithin(running: { ended: Promise<CliResult> }, ms: number, what: string): Promise<CliResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      running.ended,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} still running after ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('connections lost while tessera starts and migrates', () => {
  let database: { databaseUrl: string; drop: () => Promise<void> };
  let observer: pg.Client;
  let proxy: TcpProxy;

  before(async () => {
    database = await createPostgresDatabase();
    observer = new pg.Client({ connectionString: database.databaseUrl });
    await observer.connect();
    proxy = TcpProxy.toDatabase(database.databaseUrl);
    await proxy.start();
  });

  after(async () => {
    await proxy.cut();
    await observer.end();
    await database.drop();
  });

  it('serve exits 1 with a clear message when the database stays away longer than PG_STARTUP_TIMEOUT_MS, leaving nothing open', async () => {
    await observer.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const serving = startCli(
        children,
        options(proxy.urlFor(database.databaseUrl), {
          HOST: '127.0.0.1',
          PORT: '0',
          PG_STARTUP_TIMEOUT_MS: '2000',
          PG_CONNECT_TIMEOUT_MS: '500',
        }),
        ['serve'],
      );
      await waitingSessions(observer, TESSERA_APPLICATION_NAME, /pg_try_advisory_xact_lock/);
      await proxy.cut();
      const cutAt = Date.now();
      const ended = await exitWithin(serving, 10_000, 'tessera serve');
      const output = ended.stderr + ended.stdout;
      assert.equal(ended.code, 1, output);
      assert.ok(Date.now() - cutAt >= 1_500, `gave up ${Date.now() - cutAt} ms after the cut, before PG_STARTUP_TIMEOUT_MS`);
      assert.match(
        ended.stderr,
        /^tessera: Tessera does not start: The database cannot be reached \(.+, tried for \d+ s\)\. Start it again once the database is back \(it tries for PG_STARTUP_TIMEOUT_MS, 2000 ms\)\.$/m,
      );
      assert.match(ended.stdout, /the database cannot be reached at start-up; trying again/);
      assertNoCrash(output);
    } finally {
      await proxy.restore();
      await observer.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
    assert.deepEqual(await sessionsLeft(observer), []);
  });

  it('serve, its connection terminated while it waits for the migrations, tries again and starts once the database lets it', async () => {
    await observer.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    let released = false;
    try {
      const starting = startServerProcess({
        entry: TESSERA_MAIN,
        cwd: REPO_ROOT,
        env: { DATABASE_URL: database.databaseUrl, DEMO_APP: 'off' },
        timeoutMs: 20_000,
      });
      const started = starting.then(
        (server) => server,
        (error: unknown) => error as Error,
      );
      const pids = await waitingSessions(observer, TESSERA_APPLICATION_NAME, /pg_try_advisory_xact_lock/);
      await observer.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
      await waitingSessions(observer, TESSERA_APPLICATION_NAME, /pg_try_advisory_xact_lock/); // waiting again, on a new connection
      await observer.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      released = true;
      const server = await started;
      if (server instanceof Error) throw server;
      const output = server.stdout() + server.stderr();
      assert.match(output, /waiting up to 60 s for the migrations' lock, which the session of pid \d+/);
      assert.match(output, /the database cannot be reached at start-up; trying again/);
      const ready = await fetch(`${server.baseUrl}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await terminate(server), { code: 0, signal: null });
      assertNoCrash(server.stdout() + server.stderr());
    } finally {
      if (!released) await observer.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
    assert.deepEqual(await sessionsLeft(observer), []);
  });
});

describe('connections lost while a CLI command runs', () => {
  let database: { databaseUrl: string; drop: () => Promise<void> };
  let observer: pg.Client;
  let proxy: TcpProxy;
  let appId: string;

  before(async () => {
    database = await createPostgresDatabase();
    const created = await runCli(children, options(database.databaseUrl), ['apps', 'create', '--name', 'Before the outage', '--json']);
    assert.equal(created.code, 0, created.stderr);
    appId = (JSON.parse(created.stdout) as { appId: string }).appId;
    observer = new pg.Client({ connectionString: database.databaseUrl });
    await observer.connect();
    proxy = TcpProxy.toDatabase(database.databaseUrl);
    await proxy.start();
  });

  after(async () => {
    await proxy.cut();
    await observer.end();
    await database.drop();
  });

  /** `tessera ARGS` blocked on a lock of the apps table, then its connections lost by `lose`: exit 1, said plainly. */
  async function loseWhileBlocked(
    args: string[],
    url: string,
    lose: (pids: number[]) => Promise<void>,
    applicationName = TESSERA_APPLICATION_NAME,
  ): Promise<CliResult> {
    // Another session than the observer's: pg_stat_activity is read once per transaction.
    const locker = new pg.Client({ connectionString: database.databaseUrl });
    await locker.connect();
    let result: CliResult;
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE apps IN ACCESS EXCLUSIVE MODE');
      const running = startCli(children, options(url), args);
      const pids = await waitingSessions(observer, applicationName, /apps/i);
      await lose(pids);
      result = await exitWithin(running, 10_000, `tessera ${args.join(' ')}`);
    } finally {
      await locker.end();
    }
    assert.equal(result.code, 1, result.stderr + result.stdout);
    assertNoCrash(result.stderr + result.stdout);
    assert.deepEqual(await sessionsLeft(observer), []);
    return result;
  }

  it('apps create, its connection terminated: exit 1, "cannot reach its database"', async () => {
    const result = await loseWhileBlocked(['apps', 'create', '--name', 'During the outage'], database.databaseUrl, async (pids) => {
      await observer.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
    });
    assert.equal(result.stderr, 'tessera: The service cannot reach its database right now; try again shortly.\n');
  });

  it('apps create --json, its connection cut: exit 1, the error as JSON', async () => {
    const result = await loseWhileBlocked(
      ['apps', 'create', '--name', 'During the outage', '--json'],
      proxy.urlFor(database.databaseUrl),
      async () => {
        await proxy.cut();
      },
    );
    await proxy.restore();
    assert.deepEqual(JSON.parse(result.stderr), {
      errorCode: 'SERVICE_UNAVAILABLE',
      message: 'The service cannot reach its database right now; try again shortly.',
    });
  });

  it('a command started while the database is away: exit 1 at once, saying why', async () => {
    await proxy.cut();
    try {
      const result = await runCli(children, options(proxy.urlFor(database.databaseUrl)), ['apps', 'list']);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /^tessera: The database cannot be reached \(.*ECONNREFUSED.*\)\.\n$/);
      assertNoCrash(result.stderr + result.stdout);
    } finally {
      await proxy.restore();
    }
  });

  it('events --follow, its connection cut: exit 1 instead of following nothing', async () => {
    const running = startCli(children, options(proxy.urlFor(database.databaseUrl)), ['events', appId, '--follow']);
    await sessionOpened(observer, TESSERA_APPLICATION_NAME);
    await sleep(2_000); // following by now: the store is open, the latest events printed
    await proxy.cut();
    const result = await exitWithin(running, 10_000, 'tessera events --follow');
    await proxy.restore();
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /tessera: The service cannot reach its database right now; try again shortly\.\n$/);
    assertNoCrash(result.stderr + result.stdout);
    assert.deepEqual(await sessionsLeft(observer), []);
  });

  it('store copy into PostgreSQL, its connection cut midway: exit 1, saying what to do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-copy-loss-'));
    const target = await createPostgresDatabase();
    const targetObserver = new pg.Client({ connectionString: target.databaseUrl });
    const targetLocker = new pg.Client({ connectionString: target.databaseUrl });
    try {
      const source = `sqlite:${join(dir, 'source.db')}`;
      const created = await runCli(children, options(source), ['apps', 'create', '--name', 'To copy']);
      assert.equal(created.code, 0, created.stderr);
      // The target migrated, so that its apps table can be locked before the copy writes into it.
      const migrated = await runCli(children, options(target.databaseUrl), ['apps', 'list']);
      assert.equal(migrated.code, 0, migrated.stderr);
      await targetObserver.connect();
      await targetLocker.connect();
      await targetLocker.query('BEGIN');
      await targetLocker.query('LOCK TABLE apps IN ACCESS EXCLUSIVE MODE');
      const targetProxy = TcpProxy.toDatabase(target.databaseUrl);
      await targetProxy.start();
      let result: CliResult;
      try {
        const running = startCli(children, options(source), [
          'store',
          'copy',
          '--from',
          source,
          '--to',
          targetProxy.urlFor(target.databaseUrl),
        ]);
        await waitingSessions(targetObserver, 'tessera store copy', /apps/i);
        await targetProxy.cut();
        result = await exitWithin(running, 10_000, 'tessera store copy');
      } finally {
        await targetLocker.end();
        await targetProxy.cut();
      }
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        /^tessera: store copy: a database could not be reached \(.+\); nothing was copied: copy again once it is back\.\n$/,
      );
      assertNoCrash(result.stderr + result.stdout);
      assert.deepEqual(await sessionsLeft(targetObserver), []);
    } finally {
      await targetObserver.end().catch(() => {});
      await targetLocker.end().catch(() => {});
      await target.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
