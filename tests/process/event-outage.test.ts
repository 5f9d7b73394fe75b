import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  childrenOfFile,
  createAppWithCli,
  describeOutcome,
  exitWithin,
  Load,
  logLines,
  now,
  sleep,
  startTessera,
  tokenRequest,
  until,
  type CreatedApp,
} from '../helpers/fleet.js';
import { startOwnPostgres, type PostgresServer, type PostgresServers } from '../helpers/postgres-servers.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { scrape } from '../helpers/prometheus.js';

// `tessera serve` on a PostgreSQL of the test's own that hangs (every one of its processes stopped,
// SIGSTOP, as a stuck machine or volume leaves it) while refused token requests keep recording audit
// events, which an instance riding through the outage can answer from its cache. The log says the
// outage twice (one warning when the writes start failing, one line when they are written again,
// with the count), the events are all stored, each once (the write that hung was sent, and ran
// once the server woke: a commit in doubt), and nothing counts as lost. Then a stop while it hangs
// again, the database back within SHUTDOWN_STORE_TIMEOUT_MS: every event written, exit 0. (A hang
// that outlasts the bound: tests/process/shutdown-hung-database.test.ts.)

const children = childrenOfFile();
const DATABASE = 'tessera';
const HANG_MS = 6_000;

describe('audit events while the database hangs', () => {
  let servers: PostgresServers;
  let postgres: PostgresServer;
  let server: ServerProcess;
  let metricsUrl: string;
  let app: CreatedApp;
  let observer: pg.Client;

  before(async () => {
    let databaseUrl: string;
    ({ servers, postgres, databaseUrl } = await startOwnPostgres('hangs', DATABASE));
    app = await createAppWithCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl }, 'hung database');
    server = await startTessera(children, {
      entry: TESSERA_MAIN,
      cwd: REPO_ROOT,
      databaseUrl,
      env: {
        METRICS_PORT: '0',
        // The upgrade heartbeat every second: it fails during the hang too, and is said once.
        UPGRADE_FINALIZE_AFTER_SECONDS: '4',
        PG_QUERY_TIMEOUT_MS: '1000',
        PG_CONNECT_TIMEOUT_MS: '500',
        // Rides through the hang: the app stays cached, so refusals are answered, and recorded.
        PG_STALE_LIMIT_MS: '60000',
      },
    });
    metricsUrl = await until('the metrics URL in the log', 10_000, () => /"metrics on (http:\/\/[^"]+)"/.exec(server.stdout())?.[1]);
    observer = new pg.Client({ connectionString: databaseUrl });
    await observer.connect();
  });

  after(async () => {
    await observer?.end().catch(() => {});
    await servers?.stopAll();
  });

  it('says once that writes fail and once that they are written again (with the count); stores every event once; counts nothing lost', async () => {
    let refused = 0;
    const unexpected: string[] = [];
    const load = new Load();
    load.start(
      2,
      async () => {
        const outcome = await tokenRequest(server.baseUrl, app.appId, app.clientId, 'not-the-secret', 3_000);
        if (outcome.status === 401 || outcome.status === 400) refused++;
        else unexpected.push(describeOutcome(outcome));
      },
      20,
    );
    try {
      await until('refusals written before the hang', 10_000, async () => {
        const { rows } = await observer.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE type = 'token.refused'");
        return rows[0]!.n > 10 ? true : undefined;
      });
      postgres.pause();
      const refusedBefore = refused;
      await sleep(HANG_MS);
      assert.ok(refused - refusedBefore > 20, `refusals answered, and recorded, while it hangs: ${refused - refusedBefore}`);
      const duringHang = await scrape(metricsUrl);
      assert.ok(duringHang.value('tessera_event_buffer_events') > 0, 'events wait in memory');
      postgres.resume();
      await until('the events written again', 20_000, () =>
        logLines(server).some((line) => line.msg.startsWith('audit events are written again')) ? true : undefined,
      );
    } finally {
      postgres.resume();
      await load.stop();
    }
    assert.deepEqual(unexpected, []);
    await until('every event written', 10_000, async () =>
      (await scrape(metricsUrl)).value('tessera_event_buffer_events') === 0 ? true : undefined,
    );

    // The heartbeat tries again every second on a statement of its own, which may still be waiting
    // for its timeout when the events are written again.
    await until('the heartbeat said again', 15_000, () =>
      logLines(server).some((line) => line.msg.startsWith('this instance says again that it serves')) ? true : undefined,
    );
    const lines = logLines(server);
    const failing = lines.filter((line) => line.msg.startsWith('audit events cannot be written'));
    const again = lines.filter((line) => line.msg.startsWith('audit events are written again'));
    const eventLines = lines.filter((line) => /audit events|events recorded/.test(line.msg));
    assert.equal(failing.length, 1, JSON.stringify(eventLines));
    assert.equal(failing[0]!.level, 40);
    // The reason: a statement that was sent and never answered, or a connection that was never made.
    assert.match(failing[0]!.msg, /^audit events cannot be written: .*(timeout|timed out).*tried again every 1 s/i);
    assert.equal(again.length, 1, JSON.stringify(eventLines));
    assert.equal(again[0]!.level, 30);
    const [, seconds, failed, written] =
      /after (\d+) s in which (\d+) writes failed: (\d+) events, .* none lost$/.exec(again[0]!.msg) ?? [];
    assert.ok(written !== undefined, again[0]!.msg);
    assert.ok(Number(seconds) >= HANG_MS / 1000 - 1, again[0]!.msg);
    assert.ok(Number(failed) >= 2, again[0]!.msg);
    assert.ok(Number(written) > 20, again[0]!.msg);
    assert.deepEqual(
      eventLines.filter((line) => line !== failing[0] && line !== again[0]),
      [],
      'no other line about audit events',
    );
    const heartbeat = lines.filter((line) => line.msg.includes('(the upgrade heartbeat)'));
    assert.deepEqual(
      heartbeat.map((line) => [line.level, line.msg.replace(/:.*;/, ': …;')]),
      [
        [40, 'this instance cannot say it serves (the upgrade heartbeat): …; it tries again every 1 s, and a line says when it succeeds'],
        [30, 'this instance says again that it serves (the upgrade heartbeat)'],
      ],
      'the heartbeat failing said once, without a stack, and its recovery once',
    );
    assert.deepEqual(
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('\\n    at ')),
      [],
      'no stack trace logged for the database being away',
    );

    // Every refusal answered has its event, once: the write in doubt was not stored twice.
    const { rows } = await observer.query<{ n: number; keys: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys FROM events WHERE type = 'token.refused'",
    );
    assert.equal(rows[0]!.n, refused, `${rows[0]!.n} events stored for ${refused} refusals answered`);
    assert.equal(rows[0]!.keys, refused);

    const metrics = await scrape(metricsUrl);
    assert.ok(metrics.value('tessera_event_write_failures_total') >= Number(failed));
    for (const part of ['events', 'counts']) {
      for (const reason of ['refused', 'buffer_full', 'stopped']) {
        assert.equal(metrics.value('tessera_events_lost_total', { part, reason }), 0, `${part} ${reason}`);
      }
    }
  });

  it('writes, when stopped while the database hangs, every event once it answers again within SHUTDOWN_STORE_TIMEOUT_MS; exits 0', async () => {
    const { rows: before } = await observer.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE type = 'token.refused'");
    postgres.pause();
    let signalled: number;
    try {
      let refused = 0;
      for (let i = 0; i < 5; i++) {
        const outcome = await tokenRequest(server.baseUrl, app.appId, app.clientId, 'not-the-secret', 3_000);
        if (outcome.status === 401 || outcome.status === 400) refused++;
      }
      assert.equal(refused, 5);
      await until('the failed write said', 10_000, () =>
        logLines(server).filter((line) => line.msg.startsWith('audit events cannot be written')).length === 2 ? true : undefined,
      );
      server.child.kill('SIGTERM');
      signalled = now();
      // Still hung a while after the signal, well within the bound (10 s by default).
      await sleep(2_500);
      assert.equal(server.child.exitCode, null, 'still waiting for the database');
    } finally {
      postgres.resume();
    }
    const exit = await exitWithin(server, 15_000);
    assert.equal(exit.code, 0, server.stdout() + server.stderr());
    assert.ok(exit.at - signalled < 10_000, `exited ${Math.round(exit.at - signalled)} ms after SIGTERM`);
    const lines = logLines(server);
    assert.equal(lines.at(-1)?.msg, 'stopped');
    assert.deepEqual(
      lines.filter((line) => /are lost|Left undone/.test(line.msg)).map((line) => line.msg),
      [],
      'nothing said lost',
    );
    assert.match(
      lines.filter((line) => line.msg.startsWith('audit events are written again')).at(-1)?.msg ?? '',
      /: 5 events, .* none lost$/,
    );
    const { rows } = await observer.query<{ n: number; keys: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys FROM events WHERE type = 'token.refused'",
    );
    assert.equal(rows[0]!.n, before[0]!.n + 5, 'the five refusals of the hang are stored');
    assert.equal(rows[0]!.keys, rows[0]!.n, 'each once');
  });
});
