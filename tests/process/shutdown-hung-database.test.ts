import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  childrenOfFile,
  createAppWithCli,
  exitWithin,
  logLines,
  now,
  sleep,
  startTessera,
  tokenRequest,
  until,
  type CreatedApp,
  type LogLine,
} from '../helpers/fleet.js';
import { startOwnPostgres, type PostgresServer, type PostgresServers } from '../helpers/postgres-servers.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';

// `tessera serve` stopped (SIGTERM) while its PostgreSQL, one of the test's own, hangs: every process
// of it stopped with SIGSTOP, its connections open and nothing answering, as a stuck machine or
// volume leaves it. Closing the store would wait for it forever; the server gives up after
// SHUTDOWN_STORE_TIMEOUT_MS, says in one warning what it leaves undone (the audit events and counts
// it could not write), and exits 1. A second SIGTERM stops it at once (143). Without a hang, SIGTERM
// still writes everything and exits 0. The hung database is resumed whatever happens.

const children = childrenOfFile();
const DATABASE = 'tessera';
/** SHUTDOWN_STORE_TIMEOUT_MS of these servers: shorter than PG_QUERY_TIMEOUT_MS (5 s), so no statement times out first. */
const BOUND_MS = 3_000;
/** What the server may take past the bound: the drain before it, the exit after it. */
const MARGIN_MS = 2_000;

describe('tessera serve stopped while its PostgreSQL hangs', () => {
  let servers: PostgresServers;
  let postgres: PostgresServer;
  let databaseUrl: string;
  let app: CreatedApp;
  let observer: pg.Client;

  before(async () => {
    ({ servers, postgres, databaseUrl } = await startOwnPostgres('shutdown', DATABASE));
    app = await createAppWithCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl }, 'stopped while the database hangs');
    observer = new pg.Client({ connectionString: databaseUrl });
    await observer.connect();
  });

  after(async () => {
    postgres?.resume();
    await observer?.end().catch(() => {});
    await servers?.stopAll();
  });

  const start = (env: Record<string, string> = {}) =>
    startTessera(children, {
      entry: TESSERA_MAIN,
      cwd: REPO_ROOT,
      databaseUrl,
      env: {
        METRICS_PORT: '0',
        SHUTDOWN_STORE_TIMEOUT_MS: String(BOUND_MS),
        // Rides through the hang from its cache: refused token requests are answered, and recorded.
        PG_STALE_LIMIT_MS: '60000',
        ...env,
      },
    });

  /** `n` token requests with a wrong ClientSecret, each answered 401 and recorded as `token.refused`. */
  async function refusals(server: ServerProcess, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const outcome = await tokenRequest(server.baseUrl, app.appId, app.clientId, 'not-the-secret', 3_000);
      assert.equal(outcome.status, 401, outcome.text);
    }
  }

  /** The refusals stored, and the refusals counted. */
  async function stored(): Promise<{ events: number; counted: number }> {
    const { rows } = await observer.query<{ events: number; counted: number }>(
      `SELECT (SELECT count(*)::int FROM events WHERE type = 'token.refused') AS events,
              (SELECT coalesce(sum(count), 0)::int FROM event_counts WHERE type = 'token.refused') AS counted`,
    );
    return rows[0]!;
  }

  /** What the server logged from the signal on. */
  function linesAfterSignal(server: ServerProcess): LogLine[] {
    const lines = logLines(server);
    const draining = lines.findIndex((line) => line.msg === 'draining in-flight requests, then stopping');
    assert.ok(draining >= 0, server.stdout());
    return lines.slice(draining + 1);
  }

  async function registered(server: ServerProcess): Promise<boolean> {
    const { rows } = await observer.query('SELECT 1 FROM instances WHERE pid = $1', [server.child.pid]);
    return rows.length > 0;
  }

  it('exits 1 within SHUTDOWN_STORE_TIMEOUT_MS, with one warning saying which audit events and counts it could not write', async () => {
    const server = await start();
    const before = await stored();
    await refusals(server, 3);
    await until('the first refusals written, and counted', 10_000, async () => {
      const found = await stored();
      return found.events === before.events + 3 && found.counted === before.counted + 3 ? true : undefined;
    });

    let exit: Awaited<ReturnType<typeof exitWithin>>;
    let signalled: number;
    postgres.pause();
    try {
      await refusals(server, 4);
      server.child.kill('SIGTERM');
      signalled = now();
      exit = await exitWithin(server, BOUND_MS + MARGIN_MS + 10_000);
    } finally {
      postgres.resume();
    }
    const took = exit.at - signalled;
    assert.equal(exit.code, 1, server.stdout() + server.stderr());
    assert.ok(took >= BOUND_MS - 50, `exited ${Math.round(took)} ms after SIGTERM: before the bound`);
    assert.ok(took <= BOUND_MS + MARGIN_MS, `exited ${Math.round(took)} ms after SIGTERM`);

    const after = linesAfterSignal(server);
    assert.ok(!after.some((line) => line.msg === 'stopped'), 'not a clean stop');
    const warnings = after.filter((line) => line.level >= 40);
    // A write that waited for a new connection fails after PG_CONNECT_TIMEOUT_MS (2 s, inside the
    // bound): the outage's own warning, said once, may come first.
    const outage = warnings.filter((line) => line.msg.startsWith('audit events cannot be written: '));
    assert.ok(outage.length <= 1, JSON.stringify(warnings));
    const stopping = warnings.filter((line) => !outage.includes(line));
    assert.equal(stopping.length, 1, JSON.stringify(warnings));
    const [warning] = stopping as [LogLine];
    assert.equal(warning.level, 40);
    assert.match(
      warning.msg,
      /^stopping without finishing: the store did not close within SHUTDOWN_STORE_TIMEOUT_MS \(3000 ms\), the database not answering in time\. Left undone: /,
    );
    assert.match(warning.msg, /4 audit events, and the counts of 4 events, were not written/);
    assert.match(warning.msg, /counted as lost in tessera_events_lost_total\{reason="stopped"\}/);
    assert.match(warning.msg, /this instance is still registered on the store/);
    assert.match(warning.msg, /Exit code 1\.$/);
    assert.equal(warning.signal, 'SIGTERM');
    assert.equal(warning.timeoutMs, BOUND_MS);
    assert.equal(warning.exitCode, 1);
    assert.equal(warning.eventsNotWritten, 4);
    assert.equal(warning.countsNotWritten, 4);
    const sent = warning.eventsSentUnanswered as number;
    assert.ok(sent >= 1 && sent <= 4, `the first write of the hang was sent: ${sent}`);

    // What was sent before the hang may be carried out once the database runs again: those events
    // and no others (the ones never sent are lost). After the outage's warning, the write in flight
    // was a retry waiting for a new connection: its events never reached the database, and the
    // count of those sent is an upper bound.
    const carriedOut = (events: number) => (outage.length === 0 ? events === before.events + 3 + sent : events <= before.events + 3 + sent);
    await until('the writes sent during the hang carried out', 10_000, async () => {
      const found = await stored();
      return carriedOut(found.events) ? true : undefined;
    });
    await sleep(1_000);
    const found = await stored();
    assert.ok(
      found.events >= before.events + 3 && carriedOut(found.events),
      `${found.events - before.events - 3} of the ${sent} sent carried out`,
    );
    assert.equal(found.counted, before.counted + 3, 'their counts were never sent');
  });

  it('exits 0 on SIGTERM without a hang, every audit event and count written', async () => {
    const server = await start();
    const before = await stored();
    await refusals(server, 4);
    // At once: the last events are still in the buffer (written within 20 ms).
    server.child.kill('SIGTERM');
    const exit = await exitWithin(server, BOUND_MS + MARGIN_MS);
    assert.equal(exit.code, 0, server.stdout() + server.stderr());
    const after = linesAfterSignal(server);
    assert.deepEqual(
      after.filter((line) => line.level >= 40),
      [],
    );
    assert.equal(after.at(-1)?.msg, 'stopped');
    assert.deepEqual(await stored(), { events: before.events + 4, counted: before.counted + 4 });
    assert.equal(await registered(server), false, 'its registration removed');
  });

  it('exits at once, 143, on a second SIGTERM while it waits for the hung database, saying what it leaves undone', async () => {
    const server = await start({ SHUTDOWN_STORE_TIMEOUT_MS: '60000' });
    const before = await stored();
    await refusals(server, 1);
    await until('the first refusal written, and counted', 10_000, async () => {
      const found = await stored();
      return found.events === before.events + 1 && found.counted === before.counted + 1 ? true : undefined;
    });
    postgres.pause();
    let exit: Awaited<ReturnType<typeof exitWithin>>;
    let second: number;
    try {
      await refusals(server, 2);
      server.child.kill('SIGTERM');
      // Drained, and waiting for the store.
      await sleep(1_000);
      assert.equal(server.child.exitCode, null);
      server.child.kill('SIGTERM');
      second = now();
      exit = await exitWithin(server, 5_000);
    } finally {
      postgres.resume();
    }
    assert.equal(exit.code, 143, server.stdout() + server.stderr());
    assert.ok(exit.at - second < 1_000, `exited ${Math.round(exit.at - second)} ms after the second SIGTERM`);
    const warnings = linesAfterSignal(server).filter((line) => line.level >= 40);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(
      warnings[0]!.msg,
      /^SIGTERM again while stopping: stopping at once\. Left undone: 2 audit events, and the counts of 2 events/,
    );
    assert.match(warnings[0]!.msg, /Exit code 143\.$/);
    assert.equal(warnings[0]!.exitCode, 143);
    assert.equal(warnings[0]!.eventsNotWritten, 2);
  });
});
