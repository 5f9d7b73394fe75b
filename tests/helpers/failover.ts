import assert from 'node:assert/strict';
import pg from 'pg';
import { errorProblems } from './assert.js';
import { revokeRequest, TokenLedger, verifyTokens, type IssuedToken, type TokenKind } from './crash.js';
import {
  adminTokenRequest,
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
import { REPO_ROOT, TESSERA_APPLICATION_NAME, TESSERA_MAIN, type ServerProcess } from './process.js';

/**
 * The failover scenario of a high-availability PostgreSQL (helpers/patroni.ts), watched at once by
 * several setups of Tessera, each with whatever stands between it and the cluster (HAProxy,
 * PgBouncer, a multi-host URL) and each with its own database, app, ledger and two `tessera serve`
 * instances under load (admin and anonymous token requests, whoami with the other instance's
 * tokens, revocations). One sequence of events hits them all: every connection of Tessera's on the
 * primary is terminated several times, a planned switchover moves the primary, and the primary's
 * node crashes (kill -9). After each, for every setup: both processes alive, every answer 200 or a
 * 503 with Retry-After (401 only where a revocation was sent), both serving again within 15 s by
 * themselves, every acknowledged token valid and every acknowledged revocation in force on both
 * instances, the LISTEN connections back on the primary, and a secret rotated then refused by both
 * within 1 s. Returns what each event cost each instance, and prints it.
 */

export type FailoverEvent = 'terminate' | 'switchover' | 'crash';

/** Tessera's settings for a database of the cluster: how DATABASE_URL (and DATABASE_DIRECT_URL) reach it. */
export type DatabaseSettings = { DATABASE_URL: string; DATABASE_DIRECT_URL?: string };

/** One way of running Tessera on the cluster. */
export interface FailoverSetup {
  /** For messages and the printed figures, e.g. "HAProxy". */
  name: string;
  /** A database of this name is created on the cluster; the setups' names must differ. */
  database: string;
  settingsFor(database: string): DatabaseSettings;
  /** Settings of the instances beyond the database's. */
  env?: Record<string, string>;
  /**
   * For a pooler between Tessera and the cluster: how many of its server connections it has seen
   * end so far (from its log). Each `terminate` event must raise it: the terminations reached the
   * connections behind the pooler.
   */
  poolerServerConnectionsLost?: () => number;
}

export interface FailoverScenario {
  cluster: HaCluster;
  children: Children;
  setups: FailoverSetup[];
  /** In this order; all three by default. After `crash` the crashed node is down (HaCluster.restart brings it back). */
  events?: FailoverEvent[];
  /** Every instance must answer normally again within this long after an event started: 15 s by default. */
  servingAgainMs?: number;
}

export type RequestKind = 'admin token' | 'anonymous token' | 'whoami' | 'revocation';
const KINDS: RequestKind[] = ['admin token', 'anonymous token', 'whoami', 'revocation'];

/** What one event cost one instance of one setup. */
export interface EventCost {
  setup: string;
  event: FailoverEvent;
  instance: number;
  /** Answers to the load from the event's start until the load stopped (every instance of every setup serving steadily), and over how long. */
  answers: number;
  observedMs: number;
  /** How many were 503; when the first and the last 503 were sent, and when the last was answered (ms after the event's start; undefined when none). */
  unavailable: number;
  firstUnavailableMs: number | undefined;
  lastUnavailableMs: number | undefined;
  lastUnavailableAnsweredMs: number | undefined;
  /** The same answers by kind of request: how many, and how many were 503. */
  byKind: Record<RequestKind, { answers: number; unavailable: number }>;
  /** The longest a 503 took to come back, and the longest any answer took (ms). */
  slowestUnavailableMs: number | undefined;
  slowestAnswerMs: number;
  /** When its last abnormal answer came back (ms after the event's start): serving steadily since. */
  steadyFromMs: number;
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
/**
 * The load on each instance: loops and the pause after each request. Modest, so that six instances,
 * the cluster and the test itself share two cores and the timings still mean something.
 */
const LOAD = { tokenLoops: 1, tokenPauseMs: 30, whoamiLoops: 1, whoamiPauseMs: 20, revocationPauseMs: 150 };
/**
 * How long the test waits for any answer: Tessera's own bounds on a request that needs the database
 * (PG_CONNECT_TIMEOUT_MS for a connection, 2 s by default, then PG_QUERY_TIMEOUT_MS for the
 * statement, 5 s; through a transaction pooler the statement's wait includes the pooler's queue),
 * and a second for the rest. No answer by then is a hang.
 */
const ANSWER_BOUND_MS = 2_000 + 5_000 + 1_000;
/** A request still unanswered after this long keeps its instance from counting as serving steadily. */
const PENDING_MS = 1_000;
/** The application_name of every connection of Tessera's (src/store/postgres/connection.ts): how its LISTEN connections are found. */
const APPLICATION_NAME = TESSERA_APPLICATION_NAME;
/** The application_name of the test's own connections, spared by the terminations. */
const TEST_APPLICATION_NAME = 'tessera-test';

interface Sample {
  kind: RequestKind;
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
    application_name: TEST_APPLICATION_NAME,
    connectionTimeoutMillis: 2_000,
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Tessera's connections on the primary that LISTEN in `database`, once per instance, within `ms`; the count found last. */
async function listenersOnPrimary(cluster: HaCluster, database: string, expected: number, ms: number): Promise<number> {
  const deadline = now() + ms;
  let count: number;
  for (;;) {
    try {
      const client = await adminClient(cluster, 'postgres');
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

/** What one round of terminations did in one database. */
interface Terminated {
  terminated: number;
  listening: number;
  /** How many of the terminated connections had each application_name. */
  names: Record<string, number>;
}

/**
 * pg_terminate_backend() of every connection on the primary in `databases` but the test's own (each
 * setup's database is its alone): Tessera's, and those of a pooler in front of it. PgBouncer opens a
 * server connection with no application_name and sets its client's on it when it hands it over, so
 * some of its connections carry Tessera's name and some none: only the database names them all.
 */
async function terminateAll(cluster: HaCluster, databases: string[]): Promise<Map<string, Terminated>> {
  const client = await adminClient(cluster, 'postgres');
  try {
    const result = await client.query<{ datname: string; application_name: string; terminated: string; listening: string }>(
      `SELECT datname, application_name,
              count(*) FILTER (WHERE ended) AS terminated,
              count(*) FILTER (WHERE ended AND listening) AS listening
         FROM (SELECT datname, application_name, pg_terminate_backend(pid) AS ended, query ILIKE 'LISTEN%' AS listening
                 FROM pg_stat_activity
                WHERE datname = ANY($1) AND pid <> pg_backend_pid() AND application_name <> $2) AS backends
        GROUP BY datname, application_name`,
      [databases, TEST_APPLICATION_NAME],
    );
    const byDatabase = new Map<string, Terminated>(databases.map((database) => [database, { terminated: 0, listening: 0, names: {} }]));
    for (const row of result.rows) {
      const entry = byDatabase.get(row.datname)!;
      entry.terminated += Number(row.terminated);
      entry.listening += Number(row.listening);
      entry.names[row.application_name] = (entry.names[row.application_name] ?? 0) + Number(row.terminated);
    }
    return byDatabase;
  } finally {
    await client.end().catch(() => {});
  }
}

const round = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms));

/** One setup under way: its app, its two instances, its load and what it was answered. */
class SetupRun {
  readonly ledger = new TokenLedger();
  /** Tokens answered 200 that no revocation has been sent for: what whoami checks. */
  readonly #held: Held[] = [];
  readonly #claimed = new Set<IssuedToken>();
  /** The requests sent and not answered yet. */
  readonly #pending = new Set<{ instance: number; sentAt: number }>();
  samples: Sample[] = [];
  /** The event under way, for the ledger's messages. */
  round = '';
  /** What this setup saw of the event under way, printed with its figures. */
  detail = '';

  private constructor(
    readonly setup: FailoverSetup,
    readonly cli: { entry: string; cwd: string; databaseUrl: string; env: Record<string, string> },
    readonly app: CreatedApp,
    readonly servers: ServerProcess[],
  ) {}

  static async start(scenario: FailoverScenario, setup: FailoverSetup): Promise<SetupRun> {
    const { DATABASE_URL, ...direct } = setup.settingsFor(setup.database);
    const cli = { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: DATABASE_URL, env: { ...direct, ...setup.env } };
    const app = await createAppWithCli(scenario.children, cli, `Failover through ${setup.name}`);
    const servers = await startTesseras(scenario.children, 2, cli);
    return new SetupRun(setup, cli, app, servers);
  }

  get name(): string {
    return this.setup.name;
  }

  /** `request()`, counted as pending meanwhile. */
  async #send(instance: number, request: () => Promise<Outcome>): Promise<Outcome> {
    const entry = { instance, sentAt: now() };
    this.#pending.add(entry);
    try {
      return await request();
    } finally {
      this.#pending.delete(entry);
    }
  }

  startLoad(load: Load): void {
    const { app, servers, ledger } = this;
    for (const [instance, server] of servers.entries()) {
      const other = (instance + 1) % servers.length;
      let count = 0;
      load.start(
        LOAD.tokenLoops,
        async () => {
          const kind: TokenKind = count++ % 2 === 0 ? 'admin' : 'anonymous';
          const [clientId, clientSecret] = kind === 'admin' ? [app.clientId, app.clientSecret] : [app.appId, app.appKey];
          const outcome = await this.#send(instance, () =>
            tokenRequest(server.baseUrl, app.appId, clientId, clientSecret, ANSWER_BOUND_MS),
          );
          this.samples.push({ kind: `${kind} token`, instance, outcome });
          const issued = ledger.recordIssue(kind, this.round, outcome);
          if (issued !== undefined) this.#held.push({ issued, instance });
        },
        LOAD.tokenPauseMs,
      );
      // whoami with tokens the other instance issued.
      load.start(
        LOAD.whoamiLoops,
        async () => {
          const candidates = this.#held.filter((token) => token.instance === other);
          const target = candidates[Math.floor(Math.random() * candidates.length)];
          if (target === undefined) return sleep(20);
          const outcome = await this.#send(instance, () => whoami(server.baseUrl, app.appId, target.issued.token, ANSWER_BOUND_MS));
          this.samples.push({
            kind: 'whoami',
            instance,
            outcome,
            token: { kind: target.issued.kind, claimed: this.#claimed.has(target.issued) },
          });
        },
        LOAD.whoamiPauseMs,
      );
      // Revocations of one token in ten or so, each once, sent to either instance.
      load.start(
        1,
        async () => {
          if (this.#held.length < 10) return;
          const index = Math.floor(Math.random() * this.#held.length);
          const [target] = this.#held.splice(index, 1);
          this.#claimed.add(target!.issued);
          ledger.claim(target!.issued);
          const token = target!.issued.token;
          const outcome = await this.#send(instance, () => revokeRequest(server.baseUrl, app.appId, token, token, ANSWER_BOUND_MS));
          this.samples.push({ kind: 'revocation', instance, outcome });
          ledger.recordRevocation(this.round, target!.issued, outcome);
        },
        LOAD.revocationPauseMs,
      );
    }
  }

  /**
   * When an instance has been serving steadily since (its last abnormal answer), if it has: only
   * normal answers for STEADY_MS, some of each kind, and none of its requests long unanswered.
   */
  steadySince(instance: number, since: number): number | undefined {
    if ([...this.#pending].some((entry) => entry.instance === instance && now() - entry.sentAt > PENDING_MS)) return undefined;
    const own = this.samples.filter((sample) => sample.instance === instance && sample.outcome.sentAt >= since);
    const lastBad = own.reduce((latest, sample) => (isNormal(sample) ? latest : Math.max(latest, sample.outcome.receivedAt)), since);
    const after = own.filter((sample) => sample.outcome.sentAt > lastBad);
    const everyKind = KINDS.every((kind) => after.some((sample) => sample.kind === kind));
    return everyKind && now() - lastBad >= STEADY_MS ? lastBad : undefined;
  }

  steady(since: number): boolean {
    return this.servers.every((_, instance) => this.steadySince(instance, since) !== undefined);
  }

  /**
   * Everything that must hold after `event` (started at `startedAt`), the load stopped: what the
   * event cost (printed), and every failure.
   */
  async check(
    cluster: HaCluster,
    children: Children,
    event: FailoverEvent,
    startedAt: number,
    steady: (number | undefined)[],
    servingAgainMs: number,
  ): Promise<{ costs: EventCost[]; failures: string[] }> {
    const { app, servers, ledger, samples, name } = this;
    const failures: string[] = [];
    const expect = (ok: boolean, message: string) => {
      if (!ok) failures.push(message);
    };

    for (const [instance, server] of servers.entries()) {
      expect(server.child.exitCode === null, `instance ${instance} exited (${server.child.exitCode}); stderr: ${server.stderr()}`);
      expect(server.child.signalCode === null, `instance ${instance} was killed (${server.child.signalCode})`);
    }
    const problems = samples.flatMap((sample) => {
      const problem = answerProblem(sample, app);
      return problem === undefined ? [] : [`${problem}: ${show(sample, startedAt)}`];
    });
    if (problems.length > 0) {
      // What the instances logged of the requests they failed (a 500), with the error.
      const failed = servers.flatMap((server, instance) =>
        server
          .stdout()
          .split('\n')
          .filter((line) => line.includes('"request failed"'))
          .map((line) => `instance ${instance}: ${line.slice(0, 1_500)}`),
      );
      failures.push(
        `${problems.length} bad answers:\n${problems.slice(0, 15).join('\n')}${failed.length === 0 ? '' : `\nlogged:\n${failed.slice(0, 5).join('\n')}`}`,
      );
    }
    expect(ledger.unexpected.length === 0, `unexpected answers:\n${ledger.unexpected.slice(0, 15).join('\n')}`);

    const costs = servers.map((_, instance): EventCost => {
      const during = samples.filter((sample) => sample.instance === instance && sample.outcome.sentAt >= startedAt);
      const refused = during.filter((sample) => sample.outcome.status === 503);
      const byKind = Object.fromEntries(
        KINDS.map((kind) => [
          kind,
          {
            answers: during.filter((sample) => sample.kind === kind).length,
            unavailable: refused.filter((sample) => sample.kind === kind).length,
          },
        ]),
      ) as EventCost['byKind'];
      const sent = refused.map((sample) => sample.outcome.sentAt - startedAt);
      const took = (sample: Sample) => sample.outcome.receivedAt - sample.outcome.sentAt;
      const answered = refused.map((sample) => sample.outcome.receivedAt - startedAt);
      return {
        setup: name,
        event,
        instance,
        answers: during.length,
        observedMs: Math.round(Math.max(0, ...during.map((sample) => sample.outcome.receivedAt)) - startedAt),
        unavailable: refused.length,
        firstUnavailableMs: round(sent.length === 0 ? undefined : Math.min(...sent)),
        lastUnavailableMs: round(sent.length === 0 ? undefined : Math.max(...sent)),
        lastUnavailableAnsweredMs: round(answered.length === 0 ? undefined : Math.max(...answered)),
        byKind,
        slowestUnavailableMs: round(refused.length === 0 ? undefined : Math.max(...refused.map(took))),
        slowestAnswerMs: Math.round(Math.max(0, ...during.map(took))),
        steadyFromMs: Math.round((steady[instance] ?? NaN) - startedAt),
        rotationRefusedAfterMs: NaN,
      };
    });
    // The 503s of the whole event, whenever sent (the costs count those until the instance was steady).
    const lateRefusals = samples.filter((sample) => sample.outcome.status === 503 && sample.outcome.sentAt - startedAt > servingAgainMs);
    for (const cost of costs) {
      expect(
        steady[cost.instance] !== undefined,
        `instance ${cost.instance} was not serving steadily ${servingAgainMs + STEADY_MS} ms after the event started (last 503 sent at +${cost.lastUnavailableMs} ms)`,
      );
    }
    expect(
      lateRefusals.length === 0,
      `503 answered to requests sent more than ${servingAgainMs} ms after the event started: ${lateRefusals
        .slice(0, 5)
        .map((sample) => show(sample, startedAt))
        .join('; ')}`,
    );
    if (event !== 'terminate') {
      expect(
        samples.some((sample) => sample.outcome.status === 503 && sample.outcome.sentAt >= startedAt),
        'no answer was a 503: the event was not felt',
      );
    }

    // Every acknowledged token valid, every acknowledged revocation in force, on both instances.
    for (const [instance, server] of servers.entries()) {
      const verification = await verifyTokens(server.baseUrl, app, ledger, `${event}, instance ${instance}`, 8);
      expect(
        verification.problems.length === 0,
        `instance ${instance}: ${verification.problems.length} tokens not as answered (${JSON.stringify(verification.counts)}):\n` +
          verification.problems.slice(0, 15).join('\n'),
      );
    }
    expect(ledger.issued.length >= 20, `only ${ledger.issued.length} tokens issued`);

    // Each instance LISTENs on the primary again (it reconnects with a backoff of at most 5 s).
    const listening = await listenersOnPrimary(cluster, this.setup.database, servers.length, 6_000);
    expect(listening === servers.length, `${listening} LISTEN connections of Tessera's on the primary, not ${servers.length}`);

    try {
      const refusedAfter = await rotateSecret(children, this.cli, servers, app);
      for (const [instance, ms] of refusedAfter.entries()) {
        costs[instance]!.rotationRefusedAfterMs = Math.round(ms);
        expect(ms <= ROTATION_BOUND_MS, `the rotated secret still worked on instance ${instance} ${Math.round(ms)} ms later`);
      }
    } catch (error) {
      failures.push(`rotating the secret: ${(error as Error).message}`);
    }

    const tally: Record<string, number> = {};
    for (const sample of samples) {
      const key = `${sample.kind} ${describeOutcome(sample.outcome)}`;
      tally[key] = (tally[key] ?? 0) + 1;
    }
    console.log(`[ha] ${name}, ${event}: ${this.detail}\n[ha] ${name}, ${event}: ${samples.length} answers ${JSON.stringify(tally)}`);
    for (const cost of costs) console.log(`[ha] ${name}, ${event}, instance ${cost.instance}: ${describeCost(cost)}`);
    return { costs, failures: failures.map((failure) => `${name}, after the ${event}: ${failure}`) };
  }

  /** What must hold once every event is over. */
  finalProblems(): string[] {
    const failures: string[] = [];
    for (const [instance, server] of this.servers.entries()) {
      if (server.stderr() !== '') failures.push(`${this.name}: instance ${instance} wrote to stderr: ${server.stderr().slice(0, 2_000)}`);
      const traces = server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('\\n    at '));
      if (traces.length > 0) {
        failures.push(`${this.name}: instance ${instance} logged stack traces:\n${traces.map((line) => line.slice(0, 300)).join('\n')}`);
      }
    }
    return failures;
  }
}

function describeCost(cost: EventCost): string {
  const window =
    cost.unavailable === 0
      ? 'no 503'
      : `503 sent from +${cost.firstUnavailableMs} to +${cost.lastUnavailableMs} ms (the last answered at +${cost.lastUnavailableAnsweredMs} ms)`;
  const kinds = KINDS.map((kind) => `${kind} ${cost.byKind[kind].unavailable}/${cost.byKind[kind].answers}`).join(', ');
  return (
    `${window}, ${cost.unavailable} of ${cost.answers} answers in ${cost.observedMs} ms (503 by kind: ${kinds}); ` +
    `the slowest 503 took ${cost.slowestUnavailableMs ?? '-'} ms, the slowest answer ${cost.slowestAnswerMs} ms; ` +
    `serving steadily from +${cost.steadyFromMs} ms; old secret refused ${cost.rotationRefusedAfterMs} ms after the rotation`
  );
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

/** Settles every promise, then throws one error naming every rejection, if there was one. */
async function allOrEveryFailure<T>(promises: Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(promises);
  const failed = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed.length > 0) throw new Error(failed.map((result) => (result.reason as Error)?.message ?? String(result.reason)).join('\n\n'));
  return results.map((result) => (result as PromiseFulfilledResult<T>).value);
}

/** Makes `event` happen to the cluster (it started at `startedAt`), and tells each run what it saw of it. */
async function causeEvent(
  event: FailoverEvent,
  context: { cluster: HaCluster; runs: SetupRun[]; startedAt: number; previousPrimary: string; servingAgainMs: number },
): Promise<void> {
  const { cluster, runs, startedAt, previousPrimary, servingAgainMs } = context;
  if (event === 'terminate') {
    const lostBefore = runs.map((run) => run.setup.poolerServerConnectionsLost?.());
    const rounds: Map<string, Terminated>[] = [];
    for (let i = 0; i < TERMINATE_ROUNDS; i++) {
      const roundStart = now();
      rounds.push(
        await terminateAll(
          cluster,
          runs.map((run) => run.setup.database),
        ),
      );
      await sleep(Math.max(0, roundStart + TERMINATE_EVERY_MS - now()));
    }
    const tookMs = Math.round(now() - startedAt);
    const failures: string[] = [];
    for (const [index, run] of runs.entries()) {
      const own = rounds.map((byDatabase) => byDatabase.get(run.setup.database)!);
      const terminated = own.reduce((sum, { terminated }) => sum + terminated, 0);
      const listening = own.reduce((sum, { listening }) => sum + listening, 0);
      const names: Record<string, number> = {};
      for (const { names: counted } of own) for (const [name, n] of Object.entries(counted)) names[name] = (names[name] ?? 0) + n;
      run.detail = `${terminated} connections terminated in ${TERMINATE_ROUNDS} rounds over ${tookMs} ms (${listening} LISTEN; per round ${own.map(({ terminated }) => terminated).join(', ')}; by application_name ${JSON.stringify(names)})`;
      if (listening < run.servers.length)
        failures.push(`${run.name}: the LISTEN connections were not among the terminated (${run.detail})`);
      // Without a pooler, every connection in the database is Tessera's own, and names itself.
      const others = Object.keys(names).filter((name) => name !== APPLICATION_NAME);
      if (run.setup.poolerServerConnectionsLost === undefined && others.length > 0) {
        failures.push(`${run.name}: connections not named ${APPLICATION_NAME} in its database (${run.detail})`);
      }
      const before = lostBefore[index];
      if (before !== undefined) {
        // Behind a pooler, every connection but the LISTEN ones is the pooler's: each round must have
        // reached some, and the pooler must have seen them end.
        const missed = own.flatMap(({ terminated, listening }, round) => (terminated - listening > 0 ? [] : [round + 1]));
        if (missed.length > 0)
          failures.push(`${run.name}: rounds ${missed.join(', ')} found none of the pooler's connections (${run.detail})`);
        const lost = run.setup.poolerServerConnectionsLost!() - before;
        run.detail += `; the pooler saw ${lost} of its server connections end`;
        if (lost < TERMINATE_ROUNDS)
          failures.push(`${run.name}: the pooler saw only ${lost} of its server connections end (${run.detail})`);
      }
    }
    assert.deepEqual(failures, [], 'terminate');
  } else if (event === 'switchover') {
    await cluster.switchover();
    const moved = await cluster.primary();
    assert.notEqual(moved?.name, previousPrimary, `the switchover left the primary on ${previousPrimary}`);
    const detail = `patronictl switchover from ${previousPrimary} to ${moved?.name ?? 'none'} took ${Math.round(now() - startedAt)} ms`;
    for (const run of runs) run.detail = detail;
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
    assert.ok(promoted !== undefined, `no node took over from ${crashed.name} within ${servingAgainMs} ms\n${cluster.log()}`);
    const detail = `kill -9 of ${crashed.name} (Patroni and PostgreSQL); ${promoted} was the primary ${Math.round(now() - startedAt)} ms later`;
    for (const run of runs) run.detail = detail;
  }
}

export async function runFailoverScenario(scenario: FailoverScenario): Promise<EventCost[]> {
  const { cluster, children, setups } = scenario;
  const events = scenario.events ?? ['terminate', 'switchover', 'crash'];
  const servingAgainMs = scenario.servingAgainMs ?? 15_000;
  assert.equal(new Set(setups.map((setup) => setup.database)).size, setups.length, 'each setup needs a database of its own');
  const admin = await adminClient(cluster, 'postgres');
  try {
    for (const setup of setups) await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(setup.database)}`);
  } finally {
    await admin.end();
  }
  const runs = await allOrEveryFailure(setups.map((setup) => SetupRun.start(scenario, setup)));

  const costs: EventCost[] = [];
  const checked: FailoverEvent[] = [];
  try {
    for (const event of events) {
      const pair = await cluster.waitForSyncPair();
      const load = new Load();
      for (const run of runs) {
        run.round = event;
        run.samples = [];
        run.startLoad(load);
      }
      await sleep(LEAD_IN_MS);
      const startedAt = now();
      try {
        await causeEvent(event, { cluster, runs, startedAt, previousPrimary: pair.primary.name, servingAgainMs });
        // Until every instance has served steadily for STEADY_MS, or the bound is well past.
        while (now() - startedAt < servingAgainMs + STEADY_MS + 1_000) {
          if (runs.every((run) => run.steady(startedAt))) break;
          await sleep(100);
        }
      } finally {
        await load.stop();
      }
      assert.deepEqual(load.crashes, [], 'the load itself failed');
      // Once every request sent has been answered.
      const steady = runs.map((run) => run.servers.map((_, instance) => run.steadySince(instance, startedAt)));
      const results = await Promise.all(
        runs.map((run, index) => run.check(cluster, children, event, startedAt, steady[index]!, servingAgainMs)),
      );
      costs.push(...results.flatMap((result) => result.costs));
      const failures = results.flatMap((result) => result.failures);
      assert.deepEqual(failures, [], `after the ${event}:\n- ${failures.join('\n- ')}`);
      checked.push(event);
    }
  } finally {
    for (const run of runs) {
      const revoked = run.ledger.revocations.filter(({ outcome }) => outcome.status === 200).length;
      console.log(
        `[ha] ${run.name}: ${run.ledger.issued.length} tokens and ${revoked} revocations answered 200 and checked on both instances after each of: ${checked.join(', ') || 'none'}`,
      );
    }
    printSummary(costs);
  }

  const failures = runs.flatMap((run) => run.finalProblems());
  assert.deepEqual(failures, [], 'after every event');
  return costs;
}

/** The figures of every setup and event, one line each (both instances together), for docs/deployment.md. */
function printSummary(costs: EventCost[]): void {
  const lines = [
    '[ha] summary: setup | event | 503 sent from..to (ms after the event) | 503/answers | by kind (503/answers) | slowest 503 | steady from | secret refused after',
  ];
  const keys = [...new Set(costs.map((cost) => `${cost.setup}\u0000${cost.event}`))];
  for (const key of keys) {
    const [setup, event] = key.split('\u0000') as [string, FailoverEvent];
    const both = costs.filter((cost) => cost.setup === setup && cost.event === event);
    const firsts = both.flatMap((cost) => (cost.firstUnavailableMs === undefined ? [] : [cost.firstUnavailableMs]));
    const lasts = both.flatMap((cost) => (cost.lastUnavailableMs === undefined ? [] : [cost.lastUnavailableMs]));
    const window = firsts.length === 0 ? 'no 503' : `+${Math.min(...firsts)}..+${Math.max(...lasts)}`;
    const sum = (pick: (cost: EventCost) => number) => both.reduce((total, cost) => total + pick(cost), 0);
    const kinds = KINDS.map(
      (kind) => `${kind} ${sum((cost) => cost.byKind[kind].unavailable)}/${sum((cost) => cost.byKind[kind].answers)}`,
    ).join(', ');
    lines.push(
      `[ha] summary: ${setup} | ${event} | ${window} | ${sum((cost) => cost.unavailable)}/${sum((cost) => cost.answers)} | ${kinds} | ` +
        `${Math.max(0, ...both.map((cost) => cost.slowestUnavailableMs ?? 0))} ms | ` +
        `+${Math.max(...both.map((cost) => cost.steadyFromMs))} ms | ${Math.max(...both.map((cost) => cost.rotationRefusedAfterMs))} ms`,
    );
  }
  console.log(lines.join('\n'));
}
