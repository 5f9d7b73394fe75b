import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { openPool } from 'tessera-tokens/internal/store/postgres/connection.js';
import { postgresRunner } from 'tessera-tokens/internal/store/postgres/runner.js';
import {
  adminTokenRequest,
  childrenOfFile,
  createAppWithCli,
  describeOutcome,
  Load,
  now,
  runCli,
  sleep,
  startTessera,
  tokenRequest,
  unavailableProblems,
  whoami,
  type CreatedApp,
  type Outcome,
} from '../helpers/fleet.js';
import { findPostgresBinaries, PostgresServers, type PostgresServer } from '../helpers/postgres-servers.js';
import { REPO_ROOT, TESSERA_APPLICATION_NAME, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';

// A multi-host DATABASE_URL as libpq reads it, with no proxy in front of PostgreSQL: servers of the
// test's own (a primary, a real streaming standby, a third host down at first), the old primary
// fenced read-only and the standby promoted, then a switchover (the primary stopped, a standby
// promoted). Tessera must find the primary each time by itself.

const children = childrenOfFile();
const DATABASE = 'tessera';

async function query<Row extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/** What Tessera's connections on `server` are doing (TESSERA_APPLICATION_NAME): their last statements. */
async function tesseraSessions(server: PostgresServer): Promise<string[]> {
  const rows = await query<{ query: string }>(
    server.url(),
    'SELECT query FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()',
    [DATABASE, TESSERA_APPLICATION_NAME],
  );
  return rows.map((row) => row.query);
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = now();
  for (;;) {
    if (await check().catch(() => false)) return now() - started;
    if (now() - started > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(50);
  }
}

/** Waits until `standby` has replayed everything `primary` has written so far. */
async function caughtUp(primary: PostgresServer, standby: PostgresServer): Promise<void> {
  const [{ lsn }] = (await query<{ lsn: string }>(primary.url(), 'SELECT pg_current_wal_lsn()::text AS lsn')) as [{ lsn: string }];
  await until(`${standby.name} replays ${primary.name}'s WAL`, 10_000, async () => {
    const [row] = await query<{ done: boolean }>(standby.url(), 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn]);
    return row?.done === true;
  });
}

/** Only 200 and 503 (with the contract's body and Retry-After) may answer while the primary moves. */
function outcomeProblems(outcomes: Outcome[]): string[] {
  return outcomes.flatMap((outcome) =>
    outcome.status === 200 ? [] : outcome.status === 503 ? unavailableProblems(outcome) : [`answered ${describeOutcome(outcome)}`],
  );
}

describe('a multi-host DATABASE_URL (libpq), without a proxy', () => {
  let servers: PostgresServers;
  let a: PostgresServer;
  let b: PostgresServer;
  let c: PostgresServer | undefined;
  let portC: number;
  let url: string;
  let server: ServerProcess;
  let app: CreatedApp;
  /** Admin tokens answered 200, each must stay valid through every move. */
  const acknowledged: string[] = [];

  before(async () => {
    const bin = findPostgresBinaries();
    if (bin === undefined) {
      throw new Error('PostgreSQL server programs (initdb, pg_ctl, pg_basebackup) not found: apt-get install -y postgresql');
    }
    servers = new PostgresServers(bin);
    // The first host of the URL: nothing listens there until the switchover's standby starts on it.
    portC = await servers.reservePort();
    a = await servers.startPrimary('a');
    await query(a.url(), `CREATE DATABASE ${DATABASE}`);
    b = await servers.startStandby('b', a);
    url =
      `postgres://postgres@127.0.0.1:${portC},127.0.0.1:${b.port},127.0.0.1:${a.port}/${DATABASE}` +
      '?target_session_attrs=read-write&connect_timeout=1';
  });

  after(async () => {
    if (server !== undefined && server.child.exitCode === null) server.child.kill('SIGTERM');
    await servers?.stopAll();
  });

  it('starts, migrates and serves on the primary when the first host is down and the second is a standby; the CLI too', async () => {
    server = await startTessera(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: url });
    app = await createAppWithCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: url }, 'multi-host');
    const issued = await adminTokenRequest(server.baseUrl, app);
    assert.equal(issued.status, 200, describeOutcome(issued));
    acknowledged.push(issued.body.access_token as string);
    assert.equal((await whoami(server.baseUrl, app.appId, acknowledged[0])).status, 200);

    // The pool and the LISTEN connection are on the primary; nothing stays on the standby (the
    // search's probe there is ended at once).
    assert.ok((await tesseraSessions(a)).includes('LISTEN tessera_changes'), 'the LISTEN connection is on the primary');
    await until('no Tessera session on the standby', 3_000, async () => (await tesseraSessions(b)).length === 0);

    // When no host fits, the CLI says which host is what (never the password) and exits 1.
    const noPrimary = `postgres://postgres:pw-not-shown@127.0.0.1:${portC},127.0.0.1:${b.port}/${DATABASE}?connect_timeout=1`;
    const refused = await runCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: noPrimary }, ['apps', 'list']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /no host fits target_session_attrs=read-write/);
    assert.match(refused.stderr, new RegExp(`127\\.0\\.0\\.1:${portC} refused a connection`));
    assert.match(refused.stderr, new RegExp(`127\\.0\\.0\\.1:${b.port} is a standby`));
    assert.doesNotMatch(refused.stderr, /pw-not-shown/);
  });

  it('a write on a connection to a server fenced read-only answers 503 (25006), the connection is dropped, and the next goes to the promoted standby', async () => {
    const warnings: string[] = [];
    const { pool } = openPool(url, { poolSize: 1 }, (message) => warnings.push(message));
    const removed: pg.Client[] = [];
    pool.on('remove', (client) => removed.push(client));
    const db = postgresRunner(pool);
    const serverPort = async () => (await db.get<{ port: number }>('SELECT inet_server_port() AS port'))!.port;
    const claim = async (value: string) => db.run('INSERT INTO once_claims (value, keep_until) VALUES (:value, 0)', { value });
    const load = new Load();
    try {
      assert.equal(await serverPort(), a.port, 'the pool is on the primary');
      await claim('before the fence');

      // Fence the primary (as pg_auto_failover or an operator does before a switchover): new
      // transactions there are read-only, the sessions already open included.
      await query(a.url(), 'ALTER SYSTEM SET default_transaction_read_only = on');
      await query(a.url(), 'SELECT pg_reload_conf()');
      await until(
        'the fence holds',
        5_000,
        async () =>
          (await query<{ value: string }>(a.url(), "SELECT current_setting('default_transaction_read_only') AS value"))[0]?.value === 'on',
      );

      const loadOutcomes: Outcome[] = [];
      load.start(
        2,
        async () => {
          const outcome = await adminTokenRequest(server.baseUrl, app);
          loadOutcomes.push(outcome);
          if (outcome.status === 200) acknowledged.push(outcome.body.access_token as string);
        },
        20,
      );

      await assert.rejects(claim('on the fenced server'), (error: unknown) => {
        assert.ok(error instanceof TesseraError && isServiceUnavailable(error), String(error));
        assert.equal(error.status, 503);
        assert.ok((error.details.retryAfterSeconds ?? 0) > 0, 'with Retry-After');
        return true;
      });
      // The pool tells 'remove' once the connection has ended.
      await until('the connection that met the 25006 is dropped from the pool, not reused', 2_000, async () => removed.length === 1);
      assert.ok(
        warnings.some((warning) => warning.includes(`127.0.0.1:${a.port} refused a write as read-only (25006)`)),
        warnings.join('\n'),
      );

      await caughtUp(a, b);
      await b.promote();
      const followedIn = await until('the pool follows to the promoted standby', 5_000, async () => (await serverPort()) === b.port);
      await claim('after the promotion');
      const servedIn = await until('the server issues tokens again', 15_000, async () => loadOutcomes.at(-1)?.status === 200);
      await load.stop();
      assert.deepEqual(load.crashes, []);
      assert.deepEqual(outcomeProblems(loadOutcomes), [], 'only 200 and 503 with Retry-After while the primary moved');
      console.log(
        `# fenced + promoted: pool on the new primary ${Math.round(followedIn)} ms after the promotion; server serving within ${Math.round(servedIn)} ms; ${loadOutcomes.filter((o) => o.status === 503).length} × 503, ${loadOutcomes.filter((o) => o.status === 200).length} × 200`,
      );
    } finally {
      await load.stop();
      await pool.end();
    }

    // The server's LISTEN connection, deaf on the fenced server, moves to the new primary.
    await until('the LISTEN connection is on the new primary', 10_000, async () =>
      (await tesseraSessions(b)).includes('LISTEN tessera_changes'),
    );
    assert.equal(server.child.exitCode, null, 'the server is alive');
  });

  it('follows a switchover (the primary stopped, a standby promoted) with no proxy; nothing acknowledged is lost, a rotated secret is refused within 1 s', async () => {
    c = await servers.startStandby('c', b, portC);
    await caughtUp(b, c);
    assert.ok((await tesseraSessions(c)).length === 0, "nothing on the standby that took the first host's port");

    const outcomes: Outcome[] = [];
    const load = new Load();
    let stoppedAt: number, promotedAt: number, servingAt: number;
    try {
      load.start(
        2,
        async () => {
          const outcome = await adminTokenRequest(server.baseUrl, app);
          outcomes.push(outcome);
          if (outcome.status === 200) acknowledged.push(outcome.body.access_token as string);
        },
        20,
      );
      await sleep(300);

      stoppedAt = now();
      await b.stop('fast'); // every session ends with 57P01, WAL is all sent to the standby
      await c.promote();
      promotedAt = now();
      await until(
        'the server issues tokens again',
        15_000,
        async () => outcomes.at(-1)?.status === 200 && outcomes.at(-1)!.sentAt > promotedAt,
      );
      servingAt = now();
      await sleep(300);
    } finally {
      await load.stop();
    }
    assert.deepEqual(load.crashes, []);
    assert.deepEqual(outcomeProblems(outcomes), [], 'only 200 and 503 with Retry-After during the switchover');
    assert.equal(server.child.exitCode, null, 'the server is alive');
    console.log(
      `# switchover: serving again ${Math.round(servingAt - promotedAt)} ms after the promotion (${Math.round(servingAt - stoppedAt)} ms after the stop); ${outcomes.filter((o) => o.status === 503).length} × 503, ${outcomes.filter((o) => o.status === 200).length} × 200`,
    );

    await until('the LISTEN connection is on the new primary', 10_000, async () =>
      (await tesseraSessions(c!)).includes('LISTEN tessera_changes'),
    );
    for (const token of acknowledged) {
      const checked = await whoami(server.baseUrl, app.appId, token);
      assert.equal(checked.status, 200, `an acknowledged token is still valid: ${describeOutcome(checked)}`);
    }

    // A change made by another process (the CLI, through the same multi-host URL) reaches the server
    // through its LISTEN connection on the new primary.
    const rotated = await runCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: url }, [
      'apps',
      'rotate-secret',
      app.appId,
      '--json',
    ]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const rotatedAt = now();
    const refusedIn = await until('the old ClientSecret is refused', 1_000, async () => {
      const outcome = await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret);
      return outcome.status === 401;
    });
    assert.ok(now() - rotatedAt <= 1_000, `refused ${Math.round(refusedIn)} ms after the rotation`);
    assert.doesNotMatch(server.stderr(), /Unhandled|uncaught/i);
  });
});
