import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import pg from 'pg';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  call,
  Children,
  cleanupsAfterAll,
  createAppWithCli,
  describeOutcome,
  Load,
  now,
  sleep,
  startTessera,
  terminate,
  unavailableProblems,
  waitForPostgres,
  whoami,
  type CreatedApp,
  type Outcome,
} from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { DEFAULT_STALE_LIMIT_MS } from '../../src/store/store.js';
import { createPostgresDatabase, POSTGRES_ADMIN_URL } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// `tessera serve` on PostgreSQL, under a steady load, while the database goes away and comes back:
// every answer is a normal one or a 503 SERVICE_UNAVAILABLE with Retry-After, nothing hangs, nothing
// crashes, and the service recovers by itself. First through a proxy that is cut (the database is
// unreachable for this process only), then, where the test may, by restarting PostgreSQL itself.

const REQUEST_TIMEOUT_MS = 5_000;
/** How long after the database is back every answer must be normal again. */
const RECOVERY_MS = 5_000;

const children = new Children();
process.once('exit', () => children.killAllNow());

/** Cleanup steps of every test, run by after() whatever happened, last registered first. */
const cleanup = cleanupsAfterAll();

type Kind = 'admin token' | 'anonymous token' | 'whoami' | 'readyz' | 'healthz';

interface Sample {
  kind: Kind;
  outcome: Outcome;
}

interface Window {
  /** now() just before the database went away, and once it was back. */
  downAt: number;
  upAt: number;
}

function show(sample: Sample): string {
  const { outcome } = sample;
  const took = Math.round(outcome.receivedAt - outcome.sentAt);
  return `${sample.kind} sent at ${Math.round(outcome.sentAt)}: ${describeOutcome(outcome)} in ${took} ms ${outcome.text.slice(0, 200)}`;
}

function isNormal(sample: Sample, app: CreatedApp): boolean {
  const { outcome } = sample;
  const body = outcome.body;
  if (outcome.status !== 200) return false;
  switch (sample.kind) {
    case 'admin token':
      return body?.id === app.adminId && typeof body?.access_token === 'string';
    case 'anonymous token':
      return body?.id === 'ANONYMOUS' && typeof body?.access_token === 'string';
    case 'whoami':
      return body?.appId === app.appId && typeof body?.principal === 'string';
    case 'readyz':
      return true;
    case 'healthz':
      return body?.status === 'ok';
  }
}

/**
 * 20 loops of token requests and whoami with tokens issued before, plus /healthz and /readyz every
 * `probeEveryMs`, for 1 s, then during `disrupt`, then until RECOVERY_MS + 1 s after it ended.
 */
async function underLoad(
  server: ServerProcess,
  app: CreatedApp,
  tokens: string[],
  disrupt: () => Promise<Window>,
  probeEveryMs: number,
): Promise<{ samples: Sample[]; window: Window }> {
  const samples: Sample[] = [];
  const load = new Load();
  const probes = new Load();
  cleanup(() => Promise.all([load.stop(), probes.stop()]));
  const counters = new Map<number, number>();
  load.start(
    20,
    async (loop) => {
      const n = counters.get(loop) ?? 0;
      counters.set(loop, n + 1);
      if (n % 2 === 0) {
        const admin = (loop + n / 2) % 2 === 0;
        const outcome = admin ? await adminTokenRequest(server.baseUrl, app) : await anonymousTokenRequest(server.baseUrl, app);
        samples.push({ kind: admin ? 'admin token' : 'anonymous token', outcome });
      } else {
        samples.push({
          kind: 'whoami',
          outcome: await whoami(server.baseUrl, app.appId, tokens[(loop + n) % tokens.length], REQUEST_TIMEOUT_MS),
        });
      }
    },
    5,
  );
  probes.start(
    1,
    async () => {
      const [ready, health] = await Promise.all([call(`${server.baseUrl}/readyz`), call(`${server.baseUrl}/healthz`)]);
      samples.push({ kind: 'readyz', outcome: ready }, { kind: 'healthz', outcome: health });
    },
    probeEveryMs,
  );
  try {
    await sleep(1_000);
    const window = await disrupt();
    await sleep(Math.max(0, window.upAt + RECOVERY_MS + 1_000 - now()));
    return { samples, window };
  } finally {
    await Promise.all([load.stop(), probes.stop()]);
    assert.deepEqual([...load.crashes, ...probes.crashes], [], 'the load itself failed');
  }
}

/** What must hold of every answer, whatever the kind of outage. */
function checkAnswers(samples: Sample[], window: Window, app: CreatedApp): void {
  const loadKinds: Kind[] = ['admin token', 'anonymous token', 'whoami'];
  const problems: string[] = [];
  for (const sample of samples) {
    const { outcome } = sample;
    // No hang (the 5 s abort), no connection reset, no other network error.
    if (outcome.status === 0) {
      problems.push(`no answer: ${show(sample)}`);
      continue;
    }
    if (sample.kind === 'healthz') {
      if (!isNormal(sample, app)) problems.push(`/healthz must always be 200: ${show(sample)}`);
      continue;
    }
    if (isNormal(sample, app)) continue;
    const unavailable = unavailableProblems(outcome);
    if (unavailable.length > 0) {
      problems.push(`neither normal nor a proper 503 (${unavailable.join('; ')}): ${show(sample)}`);
    } else if (outcome.receivedAt < window.downAt) {
      problems.push(`503 before the database went away: ${show(sample)}`);
    } else if (outcome.sentAt > window.upAt + RECOVERY_MS) {
      problems.push(`still 503 more than ${RECOVERY_MS} ms after the database was back: ${show(sample)}`);
    }
  }
  assert.deepEqual(problems.slice(0, 15), [], `${problems.length} bad answers`);

  const late = samples.filter((sample) => sample.outcome.sentAt > window.upAt + RECOVERY_MS);
  for (const kind of [...loadKinds, 'readyz', 'healthz'] as Kind[]) {
    assert.ok(late.filter((sample) => sample.kind === kind).length >= 3, `hardly any ${kind} after the recovery: the check would be empty`);
  }
  // The outage was seen at all (otherwise everything above proves nothing).
  const refused = samples.filter((sample) => sample.outcome.status === 503);
  assert.ok(
    refused.some((sample) => loadKinds.includes(sample.kind)),
    'no request of the load was answered 503 during the outage',
  );
  // /readyz saw it: 503, or ready while serving from memory within PG_STALE_LIMIT_MS.
  assert.ok(
    samples.some(
      (sample) => sample.kind === 'readyz' && (sample.outcome.status === 503 || sample.outcome.body?.database === 'unreachable'),
    ),
    '/readyz never said that the database was unreachable during the outage',
  );
}

/** Figures for the report: answers by kind and status, slowest answer, when token requests worked again. */
function summarize(name: string, samples: Sample[], window: Window): void {
  const tally: Record<string, number> = {};
  for (const sample of samples) {
    const key = `${sample.kind} ${describeOutcome(sample.outcome)}`;
    tally[key] = (tally[key] ?? 0) + 1;
  }
  const slowest = Math.max(...samples.map((sample) => sample.outcome.receivedAt - sample.outcome.sentAt));
  const tokenKinds: Kind[] = ['admin token', 'anonymous token'];
  const lastRefusal = samples
    .filter((sample) => tokenKinds.includes(sample.kind) && sample.outcome.status !== 200)
    .reduce((latest, sample) => Math.max(latest, sample.outcome.receivedAt), -Infinity);
  const recovered = lastRefusal === -Infinity ? 'never refused' : `${Math.round(lastRefusal - window.upAt)} ms after the database was back`;
  console.log(
    `[outage] ${name}: down for ${Math.round(window.upAt - window.downAt)} ms; ${samples.length} answers; ` +
      `slowest ${Math.round(slowest)} ms; last refused token request ${recovered}\n[outage] ${JSON.stringify(tally)}`,
  );
}

/** Backends of this database that LISTEN (the instance's notification connection). */
async function listeners(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  client.on('error', () => {});
  await client.connect();
  try {
    const result = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN%'`,
      [new URL(databaseUrl).pathname.slice(1)],
    );
    return Number(result.rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/** After the outage: alive, the notification connection is back (once), old tokens work, SIGTERM exits 0. */
async function checkAfterwards(server: ServerProcess, app: CreatedApp, tokens: string[], databaseUrl: string): Promise<void> {
  assert.equal(server.child.exitCode, null, `the process exited; stderr: ${server.stderr()}`);
  assert.equal(server.child.signalCode, null, 'the process was killed');
  for (const token of tokens) {
    const outcome = await whoami(server.baseUrl, app.appId, token);
    assert.equal(outcome.status, 200, `a token issued before the outage: ${describeOutcome(outcome)} ${outcome.text}`);
    assert.equal(outcome.body.appId, app.appId);
  }
  const fresh = await adminTokenRequest(server.baseUrl, app);
  assert.equal(fresh.status, 200, `a new token: ${describeOutcome(fresh)} ${fresh.text}`);
  // The LISTEN connection reconnects with a backoff of at most 5 s; exactly one must be back.
  const deadline = now() + 6_000;
  let count = await listeners(databaseUrl);
  while (count !== 1 && now() < deadline) {
    await sleep(200);
    count = await listeners(databaseUrl);
  }
  assert.equal(count, 1, 'LISTEN connections of the instance on its database after the outage');

  const exit = await terminate(server);
  assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM; stderr: ${server.stderr()}`);
  assert.ok(!/uncaught|unhandled/i.test(server.stderr()), `stderr: ${server.stderr()}`);
}

/** An app (made by the CLI, straight on the database) and admin and anonymous tokens issued by `server`. */
async function prepare(server: ServerProcess, databaseUrl: string): Promise<{ app: CreatedApp; tokens: string[] }> {
  const app = await createAppWithCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl }, 'Outage');
  const tokens: string[] = [];
  for (let i = 0; i < 4; i++) {
    const outcome = i % 2 === 0 ? await adminTokenRequest(server.baseUrl, app) : await anonymousTokenRequest(server.baseUrl, app);
    assert.equal(outcome.status, 200, `${describeOutcome(outcome)} ${outcome.text}`);
    tokens.push(outcome.body.access_token);
  }
  return { app, tokens };
}

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return join(dir, command);
    } catch {
      // not here
    }
  }
  return undefined;
}

const SERVER_ENV = { PG_CONNECT_TIMEOUT_MS: '500', PG_QUERY_TIMEOUT_MS: '1000' };

describe('the database goes away under load', () => {
  it(
    'cut for 3 s (a proxy in front of PostgreSQL): only normal answers or 503 with Retry-After, no hang, recovery by itself',
    { timeout: 60_000 },
    async () => {
      const database = await createPostgresDatabase();
      cleanup(() => database.drop());
      const proxy = TcpProxy.toDatabase(database.databaseUrl);
      await proxy.start();
      cleanup(() => proxy.cut());
      const server = await startTessera(children, {
        entry: TESSERA_MAIN,
        cwd: REPO_ROOT,
        databaseUrl: proxy.urlFor(database.databaseUrl),
        env: SERVER_ENV,
      });
      cleanup(() => children.killAll());
      const { app, tokens } = await prepare(server, database.databaseUrl);

      const { samples, window } = await underLoad(
        server,
        app,
        tokens,
        async () => {
          const downAt = now();
          await proxy.cut();
          await sleep(3_000);
          await proxy.restore();
          return { downAt, upAt: now() };
        },
        100,
      );
      summarize('proxy cut', samples, window);
      checkAnswers(samples, window, app);

      // While the proxy was cut (with 100 ms for the cut to be noticed), no admin token can have been
      // issued (it could not be stored). An anonymous token needs nothing stored: it is issued from
      // memory, and /readyz says ready (with the database unreachable), only while caches are
      // trusted, at most PG_STALE_LIMIT_MS (default) after the cut.
      const duringCut = samples.filter((sample) => sample.outcome.sentAt > window.downAt + 100 && sample.outcome.receivedAt < window.upAt);
      const trustedUntil = window.downAt + DEFAULT_STALE_LIMIT_MS + 300;
      for (const sample of duringCut) {
        const fromMemory = sample.outcome.status === 200 && sample.outcome.sentAt < trustedUntil;
        if (sample.kind === 'admin token' || ((sample.kind === 'anonymous token' || sample.kind === 'readyz') && !fromMemory)) {
          assert.deepEqual(unavailableProblems(sample.outcome), [], `during the cut: ${show(sample)}`);
        }
        if (sample.kind === 'readyz' && fromMemory) assert.equal(sample.outcome.body?.database, 'unreachable', show(sample));
      }
      assert.ok(duringCut.filter((sample) => sample.kind === 'readyz').length >= 10, 'too few /readyz probes during the cut');
      assert.ok(
        server.stdout().includes('lost the database notification connection'),
        'the instance never noticed that it lost its notification connection',
      );

      await checkAfterwards(server, app, tokens, database.databaseUrl);
    },
  );

  it('a real PostgreSQL restart (pg_ctlcluster): the same guarantees', { timeout: 90_000 }, async (t) => {
    const command = onPath('pg_ctlcluster');
    if (command === undefined) {
      t.skip('pg_ctlcluster is not installed: PostgreSQL cannot be restarted from here');
      return;
    }
    if (process.getuid?.() !== 0) {
      t.skip('not running as root: pg_ctlcluster cannot restart PostgreSQL');
      return;
    }
    const admin = new URL(POSTGRES_ADMIN_URL);
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(admin.hostname)) {
      t.skip(`the test server ${admin.host} is not local: restarting a local cluster would not take it down`);
      return;
    }
    const port = admin.port || '5432';
    const { stdout: clusters } = await promisify(execFile)('pg_lsclusters', ['--no-header']);
    const cluster = clusters
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .find((fields) => fields[2] === port);
    if (cluster === undefined) {
      t.skip(`no cluster listed by pg_lsclusters listens on port ${port}`);
      return;
    }
    const [version, name] = cluster as [string, string];

    const database = await createPostgresDatabase();
    cleanup(() => database.drop());
    // Whatever happens below, PostgreSQL must accept connections again before the next test file
    // (and before the database above is dropped).
    cleanup(async () => {
      try {
        await waitForPostgres(POSTGRES_ADMIN_URL, 15_000);
      } catch {
        await promisify(execFile)(command, ['--skip-systemctl-redirect', version, name, 'start']).catch(() => {});
        await waitForPostgres(POSTGRES_ADMIN_URL, 30_000);
      }
    });
    const server = await startTessera(children, {
      entry: TESSERA_MAIN,
      cwd: REPO_ROOT,
      databaseUrl: database.databaseUrl,
      env: SERVER_ENV,
    });
    cleanup(() => children.killAll());
    const { app, tokens } = await prepare(server, database.databaseUrl);

    const { samples, window } = await underLoad(
      server,
      app,
      tokens,
      async () => {
        const downAt = now();
        await promisify(execFile)(command, ['--skip-systemctl-redirect', version, name, 'restart'], { timeout: 60_000 });
        await waitForPostgres(POSTGRES_ADMIN_URL, 30_000);
        return { downAt, upAt: now() };
      },
      50,
    );
    summarize('PostgreSQL restart', samples, window);
    checkAnswers(samples, window, app);
    await checkAfterwards(server, app, tokens, database.databaseUrl);
  });
});
