import assert from 'node:assert/strict';
import pg from 'pg';
import { errorProblems } from './assert.js';
import { revokeRequest, TokenLedger, verifyTokens, type IssuedToken, type TokenKind } from './crash.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  createAppWithCli,
  describeOutcome,
  Load,
  now,
  runCli,
  sleep,
  startTesseras,
  tokenRequest,
  unavailableProblems,
  whoami,
  type Children,
  type CreatedApp,
  type Outcome,
} from './fleet.js';
import type { HaCluster } from './patroni.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from './process.js';

/**
 * The failover scenario of a high-availability PostgreSQL (helpers/patroni.ts), whatever stands
 * between Tessera and it (HAProxy, PgBouncer, a multi-host URL): two `tessera serve` instances
 * under load (admin and anonymous token requests, whoami with the other instance's tokens,
 * revocations) while, in turn, every connection of Tessera's on the primary is terminated several
 * times, a planned switchover moves the primary, and the primary's node crashes (kill -9). After
 * each: both processes alive, every answer 200 or a 503 with Retry-After (401 only where a
 * revocation was sent), both serving again within 15 s by themselves, every acknowledged token
 * valid and every acknowledged revocation in force on both instances, the LISTEN connections back
 * on the primary, and a secret rotated then refused by both within 1 s. Returns what each event cost.
 */

export type FailoverEvent = 'terminate' | 'switchover' | 'crash';

/** Tessera's settings for a database of the cluster: how DATABASE_URL (and DATABASE_DIRECT_URL) reach it. */
export type DatabaseSettings = { DATABASE_URL: string; DATABASE_DIRECT_URL?: string };

export interface FailoverScenario {
  /** For messages and the printed figures, e.g. "HAProxy". */
  name: string;
  cluster: HaCluster;
  children: Children;
  /** A database of this name is created on the cluster; the names of several scenarios on one cluster must differ. */
  database: string;
  settingsFor(database: string): DatabaseSettings;
  /** In this order; all three by default. After `crash` the crashed node is down (HaCluster.restart brings it back). */
  events?: FailoverEvent[];
  /** Settings of the instances beyond the database's. */
  env?: Record<string, string>;
  /** Every instance must answer normally again within this long after an event started: 15 s by default. */
  servingAgainMs?: number;
}

/** What one event cost one instance. */
export interface EventCost {
  event: FailoverEvent;
  instance: number;
  /** Answers to the load from the event's start until the instance was serving steadily again. */
  answers: number;
  /** How many were 503; when the first and the last 503 were sent, and when the last was answered (ms after the event's start; undefined when none). */
  unavailable: number;
  firstUnavailableMs: number | undefined;
  lastUnavailableMs: number | undefined;
  lastUnavailableAnsweredMs: number | undefined;
  /** How long after the old secret stopped working on this instance after the rotation that followed. */
  rotationRefusedAfterMs: number;
}

/** An instance is serving again once its answers have all been normal this long (and some of each kind). */
const STEADY_MS = 1_500;
/** The rotated secret must be refused by every instance within this long after the CLI exits. */
const ROTATION_BOUND_MS = 1_000;
/** Rounds of pg_terminate_backend() of the `terminate` event, and the pause between two. */
const TERMINATE_ROUNDS = 5;
const TERMINATE_EVERY_MS = 400;
/** The load runs this long before each event, so that every kind of request is in flight when it starts. */
const LEAD_IN_MS = 800;
/** The application_name of every connection of Tessera's (src/store/postgres/connection.ts). */
const APPLICATION_NAME = 'tessera';

type Kind = 'admin token' | 'anonymous token' | 'whoami' | 'revocation';
const KINDS: Kind[] = ['admin token', 'anonymous token', 'whoami', 'revocation'];

interface Sample {
  kind: Kind;
  instance: number;
  outcome: Outcome;
  /** For whoami: the kind of token sent, and whether a revocation of it had been sent by the time the answer came. */
  token?: { kind: TokenKind; claimed: boolean };
}

interface Held {
  issued: IssuedToken;
  instance: number;
}

function show(sample: Sample, since: number): string {
  const { outcome } = sample;
  return `${sample.kind} on instance ${sample.instance} sent at +${Math.round(outcome.sentAt - since)} ms: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`;
}

function isPrincipal(outcome: Outcome, app: CreatedApp, kind: TokenKind): boolean {
  const body = outcome.body;
  return (
    outcome.status === 200 &&
    body?.appId === app.appId &&
    body?.principal === kind &&
    body?.id === (kind === 'admin' ? app.adminId : 'ANONYMOUS')
  );
}

/** What is wrong with one answer of the load (nothing: a normal answer, or a proper 503). */
function answerProblem(sample: Sample, app: CreatedApp): string | undefined {
  const { outcome } = sample;
  if (outcome.status === 0) return 'no answer';
  if (outcome.status === 503) {
    const problems = unavailableProblems(outcome);
    return problems.length === 0 ? undefined : problems.join('; ');
  }
  switch (sample.kind) {
    case 'admin token':
    case 'anonymous token': {
      const id = sample.kind === 'admin token' ? app.adminId : 'ANONYMOUS';
      return outcome.status === 200 && outcome.body?.id === id && typeof outcome.body?.access_token === 'string'
        ? undefined
        : 'not a token';
    }
    case 'whoami':
      if (outcome.status === 200) return isPrincipal(outcome, app, sample.token!.kind) ? undefined : 'another principal';
      // Refused only when a revocation of it had been sent meanwhile; otherwise a valid token was lost.
      return sample.token!.claimed && errorProblems(outcome, 401, 'INVALID_TOKEN').length === 0 ? undefined : 'a valid token refused';
    case 'revocation':
      return outcome.status === 200 ? undefined : 'revocation failed';
  }
}

const isNormal = (sample: Sample) => sample.outcome.status === 200;

/** A connection of the test's own to the primary (through HAProxy), spared by the terminations (another application_name). */
async function adminClient(cluster: HaCluster, database: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: cluster.urlFor(database),
    application_name: 'tessera-test',
    connectionTimeoutMillis: 2_000,
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Tessera's connections on the primary that LISTEN, once per instance, within `ms`; the count found last. */
async function listenersOnPrimary(cluster: HaCluster, database: string, expected: number, ms: number): Promise<number> {
  const deadline = now() + ms;
  let count: number;
  for (;;) {
    try {
      const client = await adminClient(cluster, database);
      try {
        const result = await client.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = $2 AND query ILIKE 'LISTEN%'`,
          [APPLICATION_NAME, database],
        );
        count = Number(result.rows[0]?.n ?? 0);
      } finally {
        await client.end().catch(() => {});
      }
    } catch {
      count = -1;
    }
    if (count === expected || now() > deadline) return count;
    await sleep(200);
  }
}

/** pg_terminate_backend() of every connection of Tessera's on the primary's database: how many, and how many LISTENed. */
async function terminateAll(cluster: HaCluster, database: string): Promise<{ terminated: number; listening: number }> {
  const client = await adminClient(cluster, database);
  try {
    const result = await client.query<{ terminated: string; listening: string }>(
      `SELECT count(*) FILTER (WHERE ended) AS terminated, count(*) FILTER (WHERE ended AND listening) AS listening
         FROM (SELECT pg_terminate_backend(pid) AS ended, query ILIKE 'LISTEN%' AS listening
                 FROM pg_stat_activity WHERE application_name = $1 AND datname = $2 AND pid <> pg_backend_pid()) AS backends`,
      [APPLICATION_NAME, database],
    );
    return { terminated: Number(result.rows[0]?.terminated ?? 0), listening: Number(result.rows[0]?.listening ?? 0) };
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * `tessera apps rotate-secret`, then the old secret on every instance until it is refused: how long
 * after the CLI exited each refused it. The new secret then works on every instance, and `app` holds it.
 */
async function rotateSecret(
  children: Children,
  cli: { entry: string; cwd: string; databaseUrl: string; env?: Record<string, string> },
  servers: ServerProcess[],
  app: CreatedApp,
): Promise<number[]> {
  const rotated = await runCli(children, cli, ['apps', 'rotate-secret', app.appId, '--json']);
  assert.equal(rotated.code, 0, `apps rotate-secret: ${rotated.stderr}`);
  const newSecret = (JSON.parse(rotated.stdout) as { clientSecret: string }).clientSecret;
  const refusedAfter = await Promise.all(
    servers.map(async (server, instance) => {
      for (;;) {
        const outcome = await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret);
        if (outcome.status !== 200) {
          assert.deepEqual(errorProblems(outcome, 401, 'invalid_client'), [], `the old secret on instance ${instance}: ${outcome.text}`);
          return now() - rotated.exitedAt;
        }
        if (now() - rotated.exitedAt > ROTATION_BOUND_MS + 2_000) return now() - rotated.exitedAt;
        await sleep(20);
      }
    }),
  );
  app.clientSecret = newSecret;
  for (const [instance, server] of servers.entries()) {
    const outcome = await adminTokenRequest(server.baseUrl, app);
    assert.equal(outcome.status, 200, `the new secret on instance ${instance}: ${describeOutcome(outcome)} ${outcome.text}`);
  }
  return refusedAfter;
}

export async function runFailoverScenario(scenario: FailoverScenario): Promise<EventCost[]> {
  const { cluster, children, database, name } = scenario;
  const events = scenario.events ?? ['terminate', 'switchover', 'crash'];
  const servingAgainMs = scenario.servingAgainMs ?? 15_000;
  const setup = await adminClient(cluster, 'postgres');
  try {
    await setup.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  } finally {
    await setup.end();
  }
  const { DATABASE_URL, ...direct } = scenario.settingsFor(database);
  const options = { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: DATABASE_URL, env: { ...direct, ...scenario.env } };
  const app = await createAppWithCli(children, options, `Failover through ${name}`);
  const servers = await startTesseras(children, 2, options);

  const ledger = new TokenLedger();
  /** Tokens answered 200 that no revocation has been sent for: what whoami checks. */
  const held: Held[] = [];
  const claimed = new Set<IssuedToken>();
  let samples: Sample[] = [];
  let round = '';
  const load = new Load();
  const startLoad = () => {
    for (const [instance, server] of servers.entries()) {
      const other = (instance + 1) % servers.length;
      let count = 0;
      load.start(
        2,
        async () => {
          const kind: TokenKind = count++ % 2 === 0 ? 'admin' : 'anonymous';
          const outcome =
            kind === 'admin' ? await adminTokenRequest(server.baseUrl, app) : await anonymousTokenRequest(server.baseUrl, app);
          samples.push({ kind: `${kind} token`, instance, outcome });
          const issued = ledger.recordIssue(kind, round, outcome);
          if (issued !== undefined) held.push({ issued, instance });
        },
        40,
      );
      // whoami with tokens the other instance issued.
      load.start(
        2,
        async () => {
          const candidates = held.filter((token) => token.instance === other);
          const target = candidates[Math.floor(Math.random() * candidates.length)];
          if (target === undefined) return sleep(20);
          const outcome = await whoami(server.baseUrl, app.appId, target.issued.token);
          samples.push({ kind: 'whoami', instance, outcome, token: { kind: target.issued.kind, claimed: claimed.has(target.issued) } });
        },
        20,
      );
      // Revocations of one token in ten or so, each once, sent to either instance.
      load.start(
        1,
        async () => {
          if (held.length < 10) return;
          const index = Math.floor(Math.random() * held.length);
          const [target] = held.splice(index, 1);
          claimed.add(target!.issued);
          ledger.claim(target!.issued);
          const outcome = await revokeRequest(server.baseUrl, app.appId, target!.issued.token);
          samples.push({ kind: 'revocation', instance, outcome });
          ledger.recordRevocation(round, target!.issued, outcome);
        },
        100,
      );
    }
  };

  /** When an instance has been serving steadily since (its last abnormal answer), if it has. */
  const steadySince = (instance: number, since: number): number | undefined => {
    const own = samples.filter((sample) => sample.instance === instance && sample.outcome.sentAt >= since);
    const lastBad = own.reduce((latest, sample) => (isNormal(sample) ? latest : Math.max(latest, sample.outcome.receivedAt)), since);
    const after = own.filter((sample) => sample.outcome.sentAt > lastBad);
    const everyKind = KINDS.every((kind) => after.some((sample) => sample.kind === kind));
    return everyKind && now() - lastBad >= STEADY_MS ? lastBad : undefined;
  };

  const costs: EventCost[] = [];
  for (const event of events) {
    const pair = await cluster.waitForSyncPair();
    round = event;
    samples = [];
    startLoad();
    await sleep(LEAD_IN_MS);
    const startedAt = now();
    let detail: string;
    if (event === 'terminate') {
      const rounds: { terminated: number; listening: number }[] = [];
      for (let i = 0; i < TERMINATE_ROUNDS; i++) {
        const roundStart = now();
        rounds.push(await terminateAll(cluster, database));
        await sleep(Math.max(0, roundStart + TERMINATE_EVERY_MS - now()));
      }
      const terminated = rounds.reduce((sum, { terminated }) => sum + terminated, 0);
      const listening = rounds.reduce((sum, { listening }) => sum + listening, 0);
      assert.ok(listening >= servers.length, `${name}: the LISTEN connections were not among the terminated (${JSON.stringify(rounds)})`);
      detail = `${terminated} connections terminated in ${TERMINATE_ROUNDS} rounds over ${Math.round(now() - startedAt)} ms (${listening} LISTEN)`;
    } else if (event === 'switchover') {
      await cluster.switchover();
      const moved = await cluster.primary();
      assert.notEqual(moved?.name, pair.primary.name, `${name}: the switchover left the primary on ${pair.primary.name}`);
      detail = `patronictl switchover from ${pair.primary.name} to ${moved?.name ?? 'none'} took ${Math.round(now() - startedAt)} ms`;
    } else {
      const crashed = await cluster.crashPrimary();
      let promoted: string | undefined;
      while (now() - startedAt < servingAgainMs) {
        const current = await cluster.primary();
        if (current !== undefined && current !== crashed) {
          promoted = current.name;
          break;
        }
        await sleep(100);
      }
      assert.ok(promoted !== undefined, `${name}: no node took over from ${crashed.name} within ${servingAgainMs} ms\n${cluster.log()}`);
      detail = `kill -9 of ${crashed.name} (Patroni and PostgreSQL); ${promoted} was the primary ${Math.round(now() - startedAt)} ms later`;
    }

    // Until both instances have served steadily for STEADY_MS, or the bound is well past.
    while (now() - startedAt < servingAgainMs + STEADY_MS + 1_000) {
      if (servers.every((_, instance) => steadySince(instance, startedAt) !== undefined)) break;
      await sleep(100);
    }
    const steady = servers.map((_, instance) => steadySince(instance, startedAt));
    await load.stop();
    assert.deepEqual(load.crashes, [], 'the load itself failed');

    for (const [instance, server] of servers.entries()) {
      assert.equal(server.child.exitCode, null, `${name}, ${event}: instance ${instance} exited; stderr: ${server.stderr()}`);
      assert.equal(server.child.signalCode, null, `${name}, ${event}: instance ${instance} was killed`);
    }
    const problems = samples.flatMap((sample) => {
      const problem = answerProblem(sample, app);
      return problem === undefined ? [] : [`${problem}: ${show(sample, startedAt)}`];
    });
    const tally: Record<string, number> = {};
    for (const sample of samples) {
      const key = `${sample.kind} ${describeOutcome(sample.outcome)}`;
      tally[key] = (tally[key] ?? 0) + 1;
    }
    console.log(`[ha] ${name}, ${event}: ${detail}\n[ha] ${name}, ${event}: ${samples.length} answers ${JSON.stringify(tally)}`);
    // What the instances logged of the requests they failed (a 500), with the error.
    const failed = servers.flatMap((server, instance) =>
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"request failed"'))
        .map((line) => `instance ${instance}: ${line.slice(0, 1_500)}`),
    );
    assert.deepEqual(
      problems.slice(0, 15),
      [],
      `${name}, ${event}: ${problems.length} bad answers${failed.length === 0 ? '' : `; logged:\n${failed.slice(0, 5).join('\n')}`}`,
    );
    assert.deepEqual(ledger.unexpected.slice(0, 15), [], `${name}, ${event}: unexpected answers`);

    const eventCosts = servers.map((_, instance): EventCost => {
      const during = samples.filter((sample) => sample.instance === instance && sample.outcome.sentAt >= startedAt);
      const refused = during.filter((sample) => sample.outcome.status === 503);
      return {
        event,
        instance,
        answers: during.filter((sample) => sample.outcome.sentAt <= (steady[instance] ?? Infinity)).length,
        unavailable: refused.length,
        firstUnavailableMs:
          refused.length === 0 ? undefined : Math.round(Math.min(...refused.map((sample) => sample.outcome.sentAt)) - startedAt),
        lastUnavailableMs:
          refused.length === 0 ? undefined : Math.round(Math.max(...refused.map((sample) => sample.outcome.sentAt)) - startedAt),
        lastUnavailableAnsweredMs:
          refused.length === 0 ? undefined : Math.round(Math.max(...refused.map((sample) => sample.outcome.receivedAt)) - startedAt),
        rotationRefusedAfterMs: NaN,
      };
    });
    for (const cost of eventCosts) {
      assert.ok(
        steady[cost.instance] !== undefined,
        `${name}, ${event}: instance ${cost.instance} was not serving steadily ${servingAgainMs + STEADY_MS} ms after the event started (last 503 sent at +${cost.lastUnavailableMs} ms)`,
      );
      assert.ok(
        (cost.lastUnavailableMs ?? 0) <= servingAgainMs,
        `${name}, ${event}: instance ${cost.instance} still answered 503 ${cost.lastUnavailableMs} ms after the event started`,
      );
    }
    if (event !== 'terminate') {
      assert.ok(
        samples.some((sample) => sample.outcome.status === 503 && sample.outcome.sentAt >= startedAt),
        `${name}, ${event}: no answer was a 503: the event was not felt`,
      );
    }

    // Every acknowledged token valid, every acknowledged revocation in force, on both instances.
    for (const [instance, server] of servers.entries()) {
      const verification = await verifyTokens(server.baseUrl, app, ledger, `${event}, instance ${instance}`);
      assert.deepEqual(
        verification.problems.slice(0, 15),
        [],
        `${name}, after the ${event}, instance ${instance}: ${verification.problems.length} tokens not as answered (${JSON.stringify(verification.counts)})`,
      );
    }
    assert.ok(ledger.issued.length >= 20, `${name}: only ${ledger.issued.length} tokens issued`);

    // Each instance LISTENs on the primary again (it reconnects with a backoff of at most 5 s).
    const listening = await listenersOnPrimary(cluster, database, servers.length, 6_000);
    assert.equal(listening, servers.length, `${name}, after the ${event}: LISTEN connections of Tessera's on the primary`);

    const refusedAfter = await rotateSecret(children, options, servers, app);
    for (const [instance, ms] of refusedAfter.entries()) {
      eventCosts[instance]!.rotationRefusedAfterMs = Math.round(ms);
      assert.ok(
        ms <= ROTATION_BOUND_MS,
        `${name}, after the ${event}: the rotated secret still worked on instance ${instance} ${Math.round(ms)} ms later`,
      );
    }
    for (const cost of eventCosts) {
      const window =
        cost.unavailable === 0
          ? 'no 503'
          : `503 sent from +${cost.firstUnavailableMs} to +${cost.lastUnavailableMs} ms (the last answered at +${cost.lastUnavailableAnsweredMs} ms)`;
      console.log(
        `[ha] ${name}, ${event}, instance ${cost.instance}: ${window}, ${cost.unavailable} of ${cost.answers} answers; ` +
          `serving steadily from +${Math.round((steady[cost.instance] ?? NaN) - startedAt)} ms; old secret refused ${cost.rotationRefusedAfterMs} ms after the rotation`,
      );
    }
    costs.push(...eventCosts);
  }

  const revoked = ledger.revocations.filter(({ outcome }) => outcome.status === 200).length;
  console.log(
    `[ha] ${name}: ${ledger.issued.length} tokens and ${revoked} revocations answered 200 over ${events.length} events, ` +
      'each as answered on both instances after every event',
  );
  for (const [instance, server] of servers.entries()) {
    assert.equal(server.stderr(), '', `${name}: instance ${instance} wrote to stderr`);
    const traces = server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('\\n    at '));
    assert.deepEqual(
      traces.map((line) => line.slice(0, 300)),
      [],
      `${name}: instance ${instance} logged a stack trace`,
    );
  }
  return costs;
}
