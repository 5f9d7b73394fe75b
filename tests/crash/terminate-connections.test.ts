import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import pg from 'pg';
import { errorProblems } from '../helpers/assert.js';
import { revokeRequest } from '../helpers/crash.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  Children,
  cleanupsAfterAll,
  createAppWithCli,
  describeOutcome,
  Load,
  now,
  runCli,
  sleep,
  startCli,
  startTesseras,
  terminate,
  unavailableProblems,
  whoami,
  type CreatedApp,
  type Outcome,
} from '../helpers/fleet.js';
import { PASSWORD } from '../helpers/portal.js';
import { portalClient } from '../helpers/portal-http.js';
import { childEnvironment, REPO_ROOT, TESSERA_APPLICATION_NAME, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

// What every planned PostgreSQL switchover does: pg_terminate_backend() of the service's
// connections, while they are in use. Two `tessera serve` processes on one database, under a load
// of token requests, whoami, revocations and portal sign-ins, have all their connections
// terminated ten times in a few seconds: the ones running a statement, the ones inside a
// transaction (revocations held on a lock for the moment), the idle ones in the pool and the LISTEN
// connection. Both processes live, every answer is a normal one or a 503 with Retry-After, both
// answer normally again within a few seconds without a restart, and every token answered 200
// still works. Then a CLI command terminated inside its transaction: a one-line message.

/** The application_name of every connection of Tessera's (src/store/postgres/connection.ts). */
const APPLICATION_NAME = TESSERA_APPLICATION_NAME;
const ROUNDS = 10;
const ROUND_MS = 350;
/** How long a revocation's transaction is held on the lock before its connection is terminated. */
const LOCK_HOLD_MS = 100;
/** After the last termination, every answer sent later than this is normal. */
const RECOVERY_MS = 3_000;
/** Bounds of the load, whatever the machine's speed. */
const MAX_TOKENS = 2_500;
const MAX_REQUESTS = 12_000;
/**
 * What the load may add once the recovery window is over, whatever it did before: the check after
 * the recovery needs answers, and a fast machine can reach the bounds above during the storm.
 */
const LATE_TOKENS = 300;
const LATE_REQUESTS = 1_500;

const children = new Children();
process.once('exit', () => children.killAllNow());

/** Cleanup steps of every test, run by after() whatever happened, last registered first. */
const cleanup = cleanupsAfterAll();

type Kind = 'admin token' | 'anonymous token' | 'whoami' | 'revocation' | 'sign-in' | 'portal page';
/** Answers of the portal: pages and redirects (a 503 is a page too, not the API's JSON). */
const PORTAL_KINDS: Kind[] = ['sign-in', 'portal page'];

interface Sample {
  kind: Kind;
  instance: number;
  outcome: Outcome;
}

interface IssuedToken {
  token: string;
  kind: 'admin' | 'anonymous';
  instance: number;
  /** The app it is of: one whose tokens are opaque, or one whose tokens are JWTs. */
  app: CreatedApp;
}

/** One terminated connection, as pg_stat_activity described it at that moment. */
interface Terminated {
  state: string | null;
  inTransaction: boolean;
  listening: boolean;
  waitingOnLock: boolean;
}

function show(sample: Sample): string {
  const { outcome } = sample;
  return `${sample.kind} on instance ${sample.instance} sent at ${Math.round(outcome.sentAt)}: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`;
}

function isPrincipal(outcome: Outcome, app: CreatedApp, kind: IssuedToken['kind']): boolean {
  const body = outcome.body;
  return (
    outcome.status === 200 &&
    body?.appId === app.appId &&
    body?.principal === kind &&
    body?.id === (kind === 'admin' ? app.adminId : 'ANONYMOUS')
  );
}

/** The portal's sign-in form, then the apps page with the session: each answer as an Outcome. */
async function portalSignIn(server: ServerProcess, email: string): Promise<{ kind: Kind; outcome: Outcome }[]> {
  const client = portalClient(server);
  const exchange = async (kind: Kind, path: string, init?: RequestInit) => {
    const sentAt = now();
    try {
      const response = await client.send(path, { ...init, signal: AbortSignal.timeout(5_000) });
      return {
        kind,
        outcome: {
          status: response.status,
          headers: response.headers,
          body: undefined,
          text: response.text,
          error: undefined,
          sentAt,
          receivedAt: now(),
        },
      };
    } catch (error) {
      return {
        kind,
        outcome: { status: 0, headers: undefined, body: undefined, text: '', error: String(error), sentAt, receivedAt: now() },
      };
    }
  };
  const form = await exchange('sign-in', '/portal/sign-in');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.outcome.text)?.[1];
  if (form.outcome.status !== 200 || csrf === undefined) return [form];
  const body = new URLSearchParams({ _csrf: csrf, email, password: PASSWORD }).toString();
  const signedIn = await exchange('sign-in', '/portal/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  if (signedIn.outcome.status !== 303) return [form, signedIn];
  return [form, signedIn, await exchange('portal page', '/portal/')];
}

/** `tessera developers create --email EMAIL --password-stdin`, the portal's password on standard input. */
async function createDeveloper(children: Children, databaseUrl: string, email: string): Promise<void> {
  const child = spawn(process.execPath, [TESSERA_MAIN, 'developers', 'create', '--email', email, '--password-stdin'], {
    cwd: REPO_ROOT,
    env: childEnvironment({ DATABASE_URL: databaseUrl }),
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(`${PASSWORD}\n`);
  const code = await new Promise<number | null>((resolve, reject) => child.on('error', reject).on('close', resolve));
  assert.equal(code, 0, `developers create: ${stderr}`);
}

/** A connection of the test's own to the test's database, which the storm spares (another application_name). */
async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'tessera-test' });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * One termination: revocations are held inside their transactions on the lock of revoked_tokens
 * for a moment, then every connection of Tessera's on the database is terminated (and the lock let go).
 */
async function terminateAll(admin: pg.Client, database: string): Promise<Terminated[]> {
  await admin.query('BEGIN');
  try {
    await admin.query('LOCK TABLE revoked_tokens IN SHARE ROW EXCLUSIVE MODE');
    await sleep(LOCK_HOLD_MS);
    const result = await admin.query<{ state: string | null; in_transaction: boolean; listening: boolean; waiting_on_lock: boolean }>(
      `SELECT state, xact_start IS NOT NULL AS in_transaction, query ILIKE 'LISTEN%' AS listening,
              wait_event_type IS NOT DISTINCT FROM 'Lock' AS waiting_on_lock, pg_terminate_backend(pid)
         FROM pg_stat_activity
        WHERE application_name = $1 AND datname = $2 AND pid <> pg_backend_pid()`,
      [APPLICATION_NAME, database],
    );
    return result.rows.map((row) => ({
      state: row.state,
      inTransaction: row.in_transaction,
      listening: row.listening,
      waitingOnLock: row.waiting_on_lock,
    }));
  } finally {
    await admin.query('COMMIT');
  }
}

/** Backends of the database that LISTEN (one per instance). */
async function listeners(admin: pg.Client, database: string): Promise<number> {
  const result = await admin.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = $2 AND query ILIKE 'LISTEN%' AND state = 'idle'`,
    [APPLICATION_NAME, database],
  );
  return Number(result.rows[0]?.n ?? 0);
}

describe('PostgreSQL connections terminated while in use (pg_terminate_backend, as a switchover does)', () => {
  it(
    'two instances under load live through ten terminations of all their connections: 200 or 503 only, recovery by themselves, no token lost',
    { timeout: 90_000 },
    async () => {
      const database = await createPostgresDatabase();
      cleanup(() => database.drop());
      const databaseName = new URL(database.databaseUrl).pathname.slice(1);
      const options = {
        entry: TESSERA_MAIN,
        cwd: REPO_ROOT,
        databaseUrl: database.databaseUrl,
        env: { KEY_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') },
      };
      const app = await createAppWithCli(children, options, 'Switchover');
      // Half the load is of an app whose tokens are JWTs: their rows, status list blocks and revocations meet the terminations too.
      const jwtApp = await createAppWithCli(children, options, 'Switchover JWT');
      assert.equal((await runCli(children, options, ['apps', 'configure', jwtApp.appId, 'accessTokenFormat=jwt'])).code, 0);
      const apps = [app, jwtApp];
      const email = 'operator@example.com';
      await createDeveloper(children, database.databaseUrl, email);
      const servers = await startTesseras(children, 2, options);
      cleanup(() => children.killAll());
      const admin = await connect(database.databaseUrl);
      cleanup(() => admin.end());

      const samples: Sample[] = [];
      const issued: IssuedToken[] = [];
      /** One token in five is revoked by the load (once); the others must all work at the end. */
      const revocationTargets = new Set<IssuedToken>();
      const toRevoke: IssuedToken[] = [];
      const revocations: { target: IssuedToken; outcome: Outcome }[] = [];
      const kept = () => issued.filter((token) => !revocationTargets.has(token));
      let requests = 0;
      const record = (kind: Kind, instance: number, outcome: Outcome) => {
        requests++;
        samples.push({ kind, instance, outcome });
      };

      /** When the recovery window ends: set once the storm is over. */
      let recoveredAt = Number.POSITIVE_INFINITY;
      const tokenCap = () => (now() > recoveredAt ? MAX_TOKENS + LATE_TOKENS : MAX_TOKENS);
      const requestCap = () => (now() > recoveredAt ? MAX_REQUESTS + LATE_REQUESTS : MAX_REQUESTS);

      const load = new Load();
      cleanup(() => load.stop());
      for (const [instance, server] of servers.entries()) {
        const other = (instance + 1) % servers.length;
        let count = 0;
        load.start(
          3,
          async () => {
            if (issued.length >= tokenCap() || requests >= requestCap()) return sleep(50);
            const kind = count % 2 === 0 ? 'admin' : 'anonymous';
            const of = apps[Math.floor(count++ / 2) % apps.length]!;
            const outcome =
              kind === 'admin' ? await adminTokenRequest(server.baseUrl, of) : await anonymousTokenRequest(server.baseUrl, of);
            record(`${kind} token`, instance, outcome);
            if (outcome.status !== 200 || typeof outcome.body?.access_token !== 'string') return;
            const token = { token: outcome.body.access_token as string, kind, instance, app: of } satisfies IssuedToken;
            issued.push(token);
            if (issued.length % 5 === 0) {
              revocationTargets.add(token);
              toRevoke.push(token);
            }
          },
          10,
        );
        // whoami with tokens the other instance issued.
        load.start(
          2,
          async () => {
            const candidates = kept().filter((token) => token.instance === other);
            if (candidates.length === 0 || requests >= requestCap()) return sleep(20);
            const target = candidates[Math.floor(Math.random() * candidates.length)]!;
            const outcome = await whoami(server.baseUrl, target.app.appId, target.token);
            record('whoami', instance, outcome);
            if (outcome.status === 200 && !isPrincipal(outcome, target.app, target.kind))
              assert.fail(`whoami answered another principal: ${outcome.text}`);
          },
          10,
        );
        // Revocations, each token by itself: an anonymous one is written in a transaction (revoked_tokens).
        load.start(
          1,
          async () => {
            const target = toRevoke.shift();
            if (target === undefined || requests >= requestCap()) return sleep(20);
            const outcome = await revokeRequest(server.baseUrl, target.app.appId, target.token);
            record('revocation', instance, outcome);
            revocations.push({ target, outcome });
          },
          10,
        );
        // Portal sign-ins: a password check, and a session written in a transaction.
        load.start(
          1,
          async () => {
            if (requests >= requestCap()) return sleep(50);
            for (const { kind, outcome } of await portalSignIn(server, email)) record(kind, instance, outcome);
          },
          100,
        );
      }

      await sleep(1_000);
      const terminated: Terminated[] = [];
      const stormStartedAt = now();
      for (let round = 0; round < ROUNDS; round++) {
        const started = now();
        terminated.push(...(await terminateAll(admin, databaseName)));
        await sleep(Math.max(0, started + ROUND_MS - now()));
      }
      const stormEndedAt = now();
      recoveredAt = stormEndedAt + RECOVERY_MS;
      await sleep(RECOVERY_MS + 1_500);
      await load.stop();
      assert.deepEqual(load.crashes, [], 'the load itself failed');

      const tally: Record<string, number> = {};
      for (const sample of samples) {
        const key = `${sample.kind} ${describeOutcome(sample.outcome)}`;
        tally[key] = (tally[key] ?? 0) + 1;
      }
      const states: Record<string, number> = {};
      for (const connection of terminated) {
        // 'active' (a statement), 'idle in transaction' (checked out between statements), 'idle' (in the pool).
        const key = connection.listening
          ? 'listening'
          : connection.waitingOnLock
            ? 'waiting on the lock in a transaction'
            : (connection.state ?? 'starting');
        states[key] = (states[key] ?? 0) + 1;
      }
      console.log(
        `[terminate] ${terminated.length} connections terminated in ${ROUNDS} rounds over ${Math.round(stormEndedAt - stormStartedAt)} ms: ${JSON.stringify(states)}\n` +
          `[terminate] ${samples.length} answers, ${issued.length} tokens issued: ${JSON.stringify(tally)}`,
      );

      // Both processes lived through it.
      for (const [instance, server] of servers.entries()) {
        assert.equal(server.child.exitCode, null, `instance ${instance} exited; stderr: ${server.stderr()}`);
        assert.equal(server.child.signalCode, null, `instance ${instance} was killed`);
      }

      // The storm hit connections at every moment of their lives.
      assert.ok(
        terminated.filter((connection) => connection.listening).length >= servers.length,
        `LISTEN connections terminated: ${JSON.stringify(states)}`,
      );
      assert.ok(
        terminated.some((connection) => connection.inTransaction && !connection.listening),
        `no connection was terminated inside a transaction: ${JSON.stringify(states)}`,
      );
      assert.ok(
        terminated.some((connection) => connection.state === 'idle'),
        `no idle connection was terminated: ${JSON.stringify(states)}`,
      );
      assert.ok(
        samples.some((sample) => sample.outcome.status === 503),
        'no answer was a 503: the storm was not felt',
      );

      // Every answer was a normal one or a 503 with Retry-After: no 500, no reset connection, no hang,
      // no valid token refused; and normal only, on both instances, once the storm was RECOVERY_MS over.
      const problems: string[] = [];
      for (const sample of samples) {
        const { outcome } = sample;
        if (outcome.status === 200 || (sample.kind === 'sign-in' && outcome.status === 303)) continue;
        const unavailable = PORTAL_KINDS.includes(sample.kind) ? (outcome.status === 503 ? [] : ['not 503']) : unavailableProblems(outcome);
        if (unavailable.length > 0) problems.push(`neither normal nor a proper 503 (${unavailable.join('; ')}): ${show(sample)}`);
        else if (outcome.sentAt > stormEndedAt + RECOVERY_MS)
          problems.push(`503 more than ${RECOVERY_MS} ms after the last termination: ${show(sample)}`);
      }
      assert.deepEqual(problems.slice(0, 15), [], `${problems.length} bad answers`);
      for (const instance of servers.keys()) {
        const late = samples.filter((sample) => sample.instance === instance && sample.outcome.sentAt > stormEndedAt + RECOVERY_MS);
        for (const kind of ['admin token', 'anonymous token', 'whoami', 'sign-in'] as Kind[]) {
          const least = kind === 'sign-in' ? 1 : 3; // a password check takes a while
          assert.ok(
            late.filter((sample) => sample.kind === kind).length >= least,
            `hardly any ${kind} on instance ${instance} after the recovery`,
          );
        }
      }

      // Each instance has its LISTEN connection back (it reconnects with a backoff of at most 5 s).
      const deadline = now() + 6_000;
      let listening = await listeners(admin, databaseName);
      while (listening !== servers.length && now() < deadline) {
        await sleep(200);
        listening = await listeners(admin, databaseName);
      }
      assert.equal(listening, servers.length, 'LISTEN connections on the database after the storm');

      // Every token answered 200 works on the instance that did not issue it, unless revoked; every
      // revocation answered 200 holds there (one that got a 503 may or may not have taken effect).
      const verify: { token: IssuedToken; expect: 'valid' | 'refused' }[] = kept().map((token) => ({ token, expect: 'valid' }));
      for (const { target, outcome } of revocations) {
        if (outcome.status === 200) verify.push({ token: target, expect: 'refused' });
      }
      const wrong: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < verify.length) {
            const { token, expect } = verify[next++]!;
            const outcome = await whoami(servers[(token.instance + 1) % servers.length]!.baseUrl, token.app.appId, token.token);
            const ok =
              expect === 'valid' ? isPrincipal(outcome, token.app, token.kind) : errorProblems(outcome, 401, 'INVALID_TOKEN').length === 0;
            if (!ok)
              wrong.push(
                `${token.kind} token of instance ${token.instance}, expected ${expect}: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`,
              );
          }
        }),
      );
      assert.ok(kept().length >= 50, `only ${kept().length} tokens to check`);
      assert.deepEqual(wrong.slice(0, 15), [], `${wrong.length} of ${verify.length} tokens not as answered`);

      for (const [instance, server] of servers.entries()) {
        assert.equal(server.stderr(), '', `instance ${instance} wrote to stderr`);
        // The log tells the loss and the return of the notification connection, with no stack trace.
        assert.ok(
          server.stdout().includes('the database notification connection is back'),
          `instance ${instance} never said its notifications were back`,
        );
        const traces = server
          .stdout()
          .split('\n')
          .filter((line) => line.includes('\\n    at '));
        assert.deepEqual(
          traces.map((line) => line.slice(0, 300)),
          [],
          `instance ${instance} logged a stack trace`,
        );
        const exit = await terminate(server);
        assert.deepEqual(exit, { code: 0, signal: null }, `instance ${instance} after SIGTERM; stderr: ${server.stderr()}`);
      }

      // No audit event of a token answered 200 is lost: a batch of events whose write met a
      // terminated connection is written again once the database answers (src/events/log.ts). A
      // batch whose COMMIT was lost with its connection may be written twice: at least, not exactly.
      const answered = (kind: 'admin' | 'anonymous') => issued.filter((token) => token.kind === kind).length;
      const events = await admin.query<{ n: string }>(
        "SELECT count(*) AS n FROM events WHERE app_id = ANY($1) AND type = 'token.issued' AND principal = 'admin'",
        [apps.map((each) => each.appId)],
      );
      assert.ok(
        Number(events.rows[0]!.n) >= answered('admin'),
        `${events.rows[0]!.n} token.issued events for ${answered('admin')} admin tokens answered 200`,
      );
      const counts = await admin.query<{ principal: string; n: string }>(
        "SELECT principal, sum(count) AS n FROM event_counts WHERE app_id = ANY($1) AND type = 'token.issued' GROUP BY principal",
        [apps.map((each) => each.appId)],
      );
      for (const kind of ['admin', 'anonymous'] as const) {
        const counted = Number(counts.rows.find((row) => row.principal === kind)?.n ?? 0);
        assert.ok(counted >= answered(kind), `${counted} ${kind} tokens counted for ${answered(kind)} answered 200`);
      }
    },
  );

  it(
    'a CLI command whose connection is terminated inside its transaction exits 1 with a one-line message',
    { timeout: 30_000 },
    async () => {
      const database = await createPostgresDatabase();
      cleanup(() => database.drop());
      const databaseName = new URL(database.databaseUrl).pathname.slice(1);
      const options = { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: database.databaseUrl };
      const app = await createAppWithCli(children, options, 'Switchover CLI');
      const admin = await connect(database.databaseUrl);
      cleanup(() => admin.end());

      // The revoke-all waits inside its transaction on the lock of tokens, until its connection is
      // terminated. (Another connection watches: pg_stat_activity is read once per transaction.)
      const locker = await connect(database.databaseUrl);
      cleanup(() => locker.end());
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE tokens IN ACCESS EXCLUSIVE MODE');
      const cli = startCli(children, options, ['tokens', 'revoke-all', app.appId, '--kind', 'admin']);
      let waiting = 0;
      const deadline = now() + 10_000;
      while (waiting === 0 && now() < deadline) {
        await sleep(50);
        const result = await admin.query(
          `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = $2 AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM tokens%'`,
          [APPLICATION_NAME, databaseName],
        );
        waiting = result.rowCount ?? 0;
      }
      assert.equal(waiting, 1, 'the revoke-all never waited on the lock inside its transaction');
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = $2`, [
        APPLICATION_NAME,
        databaseName,
      ]);
      await locker.query('COMMIT');
      const result = await cli.ended;

      assert.equal(result.signal, null);
      assert.equal(result.code, 1, `exit code; stderr: ${result.stderr}`);
      assert.equal(result.stderr, 'tessera: The service cannot reach its database right now; try again shortly.\n');
      assert.equal(result.stdout, '');
      // The same command works at once: the CLI opens new connections.
      const again = await runCli(children, options, ['tokens', 'revoke-all', app.appId, '--kind', 'admin', '--json']);
      assert.equal(again.code, 0, again.stderr);
    },
  );
});
