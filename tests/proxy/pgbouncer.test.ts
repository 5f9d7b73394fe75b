import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { postgresRunner } from 'tessera-tokens/internal/store/postgres/runner.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { assertError } from '../helpers/assert.js';
import { childrenOfFile, createAppWithCli, runCli } from '../helpers/fleet.js';
import { adminFields, anonymousFields, bearer, requestToken, revokeToken, whoami, type JsonResponse } from '../helpers/http.js';
import { findPgbouncer, startPgbouncer, type RunningPgbouncer } from '../helpers/pgbouncer.js';
import { REPO_ROOT, TESSERA_MAIN } from '../helpers/process.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { createPostgresDatabase, POSTGRES_ADMIN_URL, type TestStore } from '../helpers/store.js';

// Tessera through Debian's PgBouncer in transaction mode (pool_mode = transaction, few server
// connections shared by every client), as operators put it in front of PostgreSQL: DATABASE_URL
// through PgBouncer, DATABASE_DIRECT_URL straight to PostgreSQL for LISTEN and the migrations.

const children = childrenOfFile();

/** A store through `pgbouncer` (and `directUrl`, if given), as the server would open it, its warnings kept. */
async function openThrough(url: string, directUrl: string | undefined, warnings: string[], queryTimeoutMs?: number): Promise<Store> {
  return openPostgresStore(url, {
    ...(directUrl === undefined ? {} : { directUrl }),
    ...(queryTimeoutMs === undefined ? {} : { queryTimeoutMs }),
    poolSize: 10,
    onWarning: (message) => warnings.push(message),
  });
}

function serverStore(store: Store, databaseUrl: string): TestStore {
  return { store, databaseUrl, dispose: () => store.close() };
}

describe('PostgreSQL through PgBouncer in transaction mode', () => {
  let binary: string;
  let pgbouncer: RunningPgbouncer | undefined;
  let database: { databaseUrl: string; drop: () => Promise<void> } | undefined;
  let pooledUrl: string;

  before(async () => {
    const found = findPgbouncer();
    if (found === undefined) {
      throw new Error(
        'pgbouncer is not installed (not on PATH, not /usr/sbin/pgbouncer): these tests need it. Install it: apt-get install -y pgbouncer',
      );
    }
    binary = found;
    pgbouncer = await startPgbouncer(binary, POSTGRES_ADMIN_URL);
    database = await createPostgresDatabase();
    pooledUrl = pgbouncer.urlFor(database.databaseUrl);
  });

  after(async () => {
    await pgbouncer?.stop();
    await database?.drop();
  });

  describe('with DATABASE_DIRECT_URL', () => {
    const servers: TestServer[] = [];
    const warnings: string[] = [];

    before(async () => {
      const direct = database!.databaseUrl;
      for (let i = 0; i < 2; i++) {
        const store = await openThrough(pooledUrl, direct, warnings);
        servers.push(await startServer({ testStore: serverStore(store, pooledUrl) }));
      }
    });

    after(async () => {
      for (const server of servers) await server.close();
      for (const server of servers) await server.testStore.dispose();
    });

    it('hears changes on both instances: the change signal is up', () => {
      for (const server of servers) assert.equal(server.testStore.store.changeSignal().up, true, warnings.join('\n'));
    });

    it('issues and checks tokens many times concurrently on both instances, every one answered 200', async () => {
      const [a, b] = servers as [TestServer, TestServer];
      const failures: string[] = [];
      const expect200 = (what: string, response: JsonResponse) => {
        if (response.status !== 200) failures.push(`${what}: ${response.status} ${response.text}`);
        return response;
      };
      for (let round = 0; round < 5; round++) {
        await Promise.all(
          [a, b].flatMap((server) =>
            Array.from({ length: 20 }, async (_, i) => {
              const target = { app: a.app, appUrl: a.appUrl.replace(a.baseUrl, server.baseUrl) };
              const fields = i % 2 === 0 ? adminFields(target) : anonymousFields(target);
              const issued = expect200('token', await requestToken(target, fields));
              const token = issued.body?.access_token as string | undefined;
              if (token === undefined) return;
              for (const checkOn of [a, b]) {
                expect200('whoami', await whoami(a.appUrl.replace(a.baseUrl, checkOn.baseUrl), bearer(token)));
              }
            }),
          ),
        );
      }
      assert.deepEqual(failures, [], pgbouncer!.log());
    });

    it('refuses on one instance, within a second, a token revoked on the other', async () => {
      const [a, b] = servers as [TestServer, TestServer];
      const onB = { app: a.app, appUrl: a.appUrl.replace(a.baseUrl, b.baseUrl) };
      for (const fields of [adminFields(onB), anonymousFields(onB)]) {
        const token = (await requestToken(onB, fields)).body.access_token as string;
        // Checked on A first, so that A has it cached when B revokes it.
        assert.equal((await whoami(a.appUrl, bearer(token))).status, 200);
        assert.equal((await revokeToken(onB.appUrl, token)).status, 200);
        const revokedAt = Date.now();
        let status = 200;
        while (status === 200 && Date.now() - revokedAt < 1_000) {
          status = (await whoami(a.appUrl, bearer(token))).status;
          if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
        }
        assert.equal(status, 401, 'the revoked token still works on the other instance after 1 s');
      }
    });

    it('runs the CLI through PgBouncer: an app it creates works on a running instance', async () => {
      const [a] = servers as [TestServer];
      const options = {
        entry: TESSERA_MAIN,
        cwd: REPO_ROOT,
        databaseUrl: pooledUrl,
        env: { DATABASE_DIRECT_URL: database!.databaseUrl },
      };
      const created = await createAppWithCli(children, options, 'Through PgBouncer');
      for (let i = 0; i < 3; i++) {
        const listed = await runCli(children, options, ['apps', 'list', '--json']);
        assert.equal(listed.code, 0, listed.stderr);
      }
      const target = { app: created, appUrl: a.appUrl.replace(a.app.appId, created.appId) };
      assert.equal((await requestToken(target, adminFields(target))).status, 200);
    });
  });

  it('answers 503 with Retry-After, not 500, while PgBouncer refuses its clients because it cannot reach PostgreSQL, and serves again after', async () => {
    // PgBouncer reaches PostgreSQL through a proxy the test cuts: its server connections end, its
    // logins fail, and it then refuses every client itself ("server login has been failing", 08P01)
    // for server_login_retry, as after a failover of the database behind it.
    const proxy = TcpProxy.toDatabase(POSTGRES_ADMIN_URL);
    await proxy.start();
    const cutOff = await startPgbouncer(binary, proxy.urlFor(POSTGRES_ADMIN_URL), { serverLoginRetrySeconds: 2 });
    const warnings: string[] = [];
    let server: TestServer | undefined;
    try {
      const url = cutOff.urlFor(database!.databaseUrl);
      server = await startServer({ testStore: serverStore(await openThrough(url, database!.databaseUrl, warnings), url) });
      const target = { app: server.app, appUrl: server.appUrl };
      assert.equal((await requestToken(target, adminFields(target))).status, 200);

      await proxy.cut();
      const answers: string[] = [];
      // The first waits in PgBouncer's queue until PG_QUERY_TIMEOUT_MS; the next are refused by PgBouncer at once.
      while (answers.length < 10) {
        const response = await requestToken(target, adminFields(target));
        answers.push(`${response.status} ${response.headers.get('retry-after') ?? '-'} ${response.body?.errorCode ?? ''}`);
      }
      assert.ok(/server login has been failing/.test(cutOff.log()), `PgBouncer did not refuse its clients:\n${cutOff.log()}`);
      assert.deepEqual(
        [...new Set(answers)],
        ['503 2 SERVICE_UNAVAILABLE'],
        `token requests while PgBouncer cannot reach PostgreSQL (${answers.length}):\n${answers.join('\n')}`,
      );

      await proxy.restore();
      const restoredAt = Date.now();
      let status = 0;
      while (status !== 200 && Date.now() - restoredAt < 5_000) {
        status = (await requestToken(target, adminFields(target))).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(status, 200, 'not serving again 5 s after PostgreSQL was reachable again');
    } finally {
      await server?.close();
      await server?.testStore.dispose();
      await cutOff.stop();
      await proxy.cut();
    }
  });

  it("answers 503 within PG_QUERY_TIMEOUT_MS, not later, when a transaction waits in PgBouncer's queue for a server connection", async () => {
    // Through a transaction pooler there is no statement_timeout: the wait is bounded by pg's
    // query_timeout, which leaves the statement queued in PgBouncer. A ROLLBACK sent after it on that
    // connection would wait behind it as long again: the connection must be dropped instead.
    const queryTimeoutMs = 1_000;
    const busy = await startPgbouncer(binary, POSTGRES_ADMIN_URL);
    const url = busy.urlFor(database!.databaseUrl);
    const holders: pg.Client[] = [];
    let server: TestServer | undefined;
    try {
      server = await startServer({ testStore: serverStore(await openThrough(url, database!.databaseUrl, [], queryTimeoutMs), url) });
      const target = { app: server.app, appUrl: server.appUrl };
      const token = (await requestToken(target, anonymousFields(target))).body.access_token as string;
      assert.equal((await whoami(server.appUrl, bearer(token))).status, 200);

      // Every server connection of PgBouncer's pool (default_pool_size = 4) busy in a transaction.
      const held: Promise<unknown>[] = [];
      for (let i = 0; i < 4; i++) {
        const holder = new pg.Client({ connectionString: url });
        holder.on('error', () => {});
        await holder.connect();
        holders.push(holder);
        const holding = holder.query('BEGIN').then(() => holder.query('SELECT pg_sleep(3)'));
        holding.catch(() => {}); // awaited below, unless the test failed first
        held.push(holding);
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      // A revocation of an anonymous token is a transaction (BEGIN, LOCK, INSERT, COMMIT).
      const startedAt = Date.now();
      const revoked = await revokeToken(server.appUrl, token);
      const tookMs = Date.now() - startedAt;
      assertError(revoked, 503, 'SERVICE_UNAVAILABLE');
      assert.match(revoked.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
      assert.ok(tookMs < queryTimeoutMs + 500, `the 503 came ${tookMs} ms after the request (PG_QUERY_TIMEOUT_MS ${queryTimeoutMs})`);

      await Promise.all(held);
      await Promise.all(holders.map((holder) => holder.query('COMMIT')));
      assert.equal((await revokeToken(server.appUrl, token)).status, 200);
      assert.equal((await whoami(server.appUrl, bearer(token))).status, 401);
    } finally {
      await Promise.all(holders.map((holder) => holder.end().catch(() => {})));
      await server?.close();
      await server?.testStore.dispose();
      await busy.stop();
    }
  });

  describe('without DATABASE_DIRECT_URL', () => {
    it('does not start through a PgBouncer as installed, and says why and what to do', async () => {
      await assert.rejects(openThrough(pooledUrl, undefined, []), (error: Error) => {
        assert.match(
          error.message,
          /^Tessera does not start: DATABASE_URL seems to go through a transaction pooler: it refused the connection: .*statement_timeout/,
        );
        assert.match(error.message, /set DATABASE_DIRECT_URL to PostgreSQL itself/);
        return true;
      });
    });

    describe('through a PgBouncer that lets its connections in (ignore_startup_parameters)', () => {
      let lenient: RunningPgbouncer;
      let lenientUrl: string;

      before(async () => {
        lenient = await startPgbouncer(binary, POSTGRES_ADMIN_URL, { ignoreStartupParameters: ['statement_timeout'] });
        lenientUrl = lenient.urlFor(database!.databaseUrl);
      });

      after(() => lenient.stop());

      it('refuses to start, instead of a deaf LISTEN and 500s: the heartbeat is not heard while the pool answers', async () => {
        const warnings: string[] = [];
        const started = Date.now();
        await assert.rejects(openThrough(lenientUrl, undefined, warnings), (error: Error) => {
          assert.match(error.message, /^Tessera does not start: DATABASE_URL seems to go through a transaction pooler: /);
          assert.match(
            error.message,
            /its LISTEN connection heard none of the notifications sent through DATABASE_URL|named prepared statements fail/,
          );
          assert.match(
            error.message,
            /set DATABASE_DIRECT_URL to PostgreSQL itself, beside DATABASE_URL \(docs\/deployment.md, "Connection poolers"\)/,
          );
          return true;
        });
        // Not before a slow machine's heartbeats would have been heard.
        assert.ok(
          Date.now() - started >= 5_000 || warnings.some((warning) => warning.includes('named prepared statement')),
          warnings.join('\n'),
        );
      });

      it('tessera serve exits non-zero with that message, and no stack trace', async () => {
        const result = await runCli(
          children,
          { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: lenientUrl, env: { HOST: '127.0.0.1', PORT: '0' } },
          ['serve'],
          30_000,
        );
        assert.equal(result.code, 1, result.stderr + result.stdout);
        assert.match(
          result.stderr,
          /^tessera: Tessera does not start: DATABASE_URL seems to go through a transaction pooler: .+ set DATABASE_DIRECT_URL/m,
        );
        assert.doesNotMatch(result.stderr + result.stdout, /Unhandled|\n\s+at .+:\d+:\d+/);
      });

      it('answers 503, never a 500, to named statements the pooler breaks, warns once, and heals by sending them unnamed', async () => {
        const pool = new pg.Pool({ connectionString: lenientUrl, max: 10 });
        const failures: { code: string; message: string }[] = [];
        const sql = postgresRunner(pool, { onNamedStatementsFailed: (error) => failures.push(error) });
        const statements = ['SELECT 1 AS one', 'SELECT 2 AS one', 'SELECT 3 AS one', 'SELECT 4 AS one'];
        const round = async () => {
          const outcomes = await Promise.allSettled(
            Array.from({ length: 200 }, (_, i) => Promise.resolve(sql.get(statements[i % statements.length]!))),
          );
          const other = outcomes.filter((outcome) => outcome.status === 'rejected' && !isServiceUnavailable(outcome.reason));
          assert.deepEqual(other, [], 'only 503s');
          return outcomes.filter((outcome) => outcome.status === 'rejected').length;
        };
        try {
          let unavailable = 0;
          for (let i = 0; i < 10 && failures.length === 0; i++) unavailable += await round();
          assert.equal(failures.length, 1, 'a named statement failed through the pooler, and was told once');
          assert.ok(['42P05', '26000', '08P01'].includes(failures[0]!.code), failures[0]!.message);
          assert.ok(unavailable > 0);
          for (let i = 0; i < 3; i++) assert.equal(await round(), 0, 'every statement works once they are unnamed');
          assert.equal(failures.length, 1);
        } finally {
          await pool.end();
        }
      });
    });
  });

  it('does not start with a DATABASE_DIRECT_URL that reaches another database: its LISTEN would hear nothing', async () => {
    const other = await createPostgresDatabase();
    try {
      // Both migrated, so that only the notifications tell them apart.
      for (const url of [database!.databaseUrl, other.databaseUrl]) await (await openThrough(url, undefined, [])).close();
      await assert.rejects(openThrough(pooledUrl, other.databaseUrl, []), (error: Error) => {
        assert.match(
          error.message,
          /^Tessera does not start: its LISTEN connection heard none of the notifications sent through DATABASE_URL/,
        );
        assert.match(error.message, /DATABASE_DIRECT_URL must reach the same database as DATABASE_URL/);
        return true;
      });
      // Its LISTEN connection and its migrations' went there directly: none is left open.
      const observer = new pg.Client({ connectionString: other.databaseUrl });
      await observer.connect();
      try {
        const { rows } = await observer.query(
          'SELECT pid, application_name, state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        );
        assert.deepEqual(rows, []);
      } finally {
        await observer.end();
      }
    } finally {
      await other.drop();
    }
  });

  describe('store copy', () => {
    it('copies into and out of PostgreSQL through PgBouncer in transaction mode', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tessera-pgbouncer-copy-'));
      const target = await createPostgresDatabase();
      try {
        const source = `sqlite:${join(dir, 'source.db')}`;
        const cli = { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: source };
        const created = await createAppWithCli(children, cli, 'Copied through PgBouncer');
        const throughPooler = pgbouncer!.urlFor(target.databaseUrl);
        const into = await runCli(children, cli, ['store', 'copy', '--from', source, '--to', throughPooler, '--json']);
        assert.equal(into.code, 0, into.stderr + pgbouncer!.log());
        const back = `sqlite:${join(dir, 'back.db')}`;
        const out = await runCli(children, cli, ['store', 'copy', '--from', throughPooler, '--to', back, '--json']);
        assert.equal(out.code, 0, out.stderr + pgbouncer!.log());
        assert.deepEqual((JSON.parse(out.stdout) as { rows: number }).rows, (JSON.parse(into.stdout) as { rows: number }).rows);
        const listed = await runCli(children, { ...cli, databaseUrl: back }, ['apps', 'show', created.appId, '--json']);
        assert.equal(listed.code, 0, listed.stderr);
        assert.equal((JSON.parse(listed.stdout) as { name: string }).name, 'Copied through PgBouncer');
      } finally {
        await target.drop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
