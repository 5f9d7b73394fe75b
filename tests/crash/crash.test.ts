import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  Children,
  createAppWithCli,
  Load,
  now,
  sleep,
  startTessera,
  type CreatedApp,
  type Outcome,
} from '../helpers/fleet.js';
import {
  revokeAllRequest,
  revokeRequest,
  sqliteIntegrity,
  TokenLedger,
  verifyTokens,
  type IssuedToken,
  type TokenKind,
} from '../helpers/crash.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

// Nothing answered is lost: under a steady load of token requests, revocations and revoke-alls, the
// real `tessera serve` process is killed with SIGKILL at chosen moments and started again on the
// same store. Every token answered 200 and not revoked still works, every revocation answered 200
// is still in force, every anonymous token answered before a revoke-all answered 200 is refused,
// and the store opens cleanly. Events are written after the answer and may be lost: not checked.

/**
 * How long a restart on a crashed store may take, from spawn to listening: 5 s, or three times the
 * first start of the same server on its new store (which migrates it), whichever is longer. A busy
 * machine (the parallel pass runs four files on two cores) slows every start alike; a crash that
 * left recovery to do would show as a restart slower than a first start.
 */
const RESTART_LIMIT_MS = 5_000;
const RESTART_TIMES_FIRST_START = 3;
/**
 * A burst of requests after a cache flush waits for PostgreSQL connections; on a busy machine the
 * default 2 s would answer some of them 503 (allowed here, but then they prove nothing).
 */
const SERVER_ENV = { PG_CONNECT_TIMEOUT_MS: '10000', PG_QUERY_TIMEOUT_MS: '10000' };

const children = new Children();
process.once('exit', () => children.killAllNow());

interface Backend {
  name: string;
  /** A fresh, empty store: its DATABASE_URL, a check of the file after a crash (SQLite), and its removal. */
  create(): Promise<{ databaseUrl: string; integrity?: () => string[]; dispose(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite',
    async create() {
      const dir = mkdtempSync(join(tmpdir(), 'tessera-crash-'));
      const path = join(dir, 'tessera.db');
      return {
        databaseUrl: `sqlite:${path}`,
        integrity: () => sqliteIntegrity(path),
        dispose: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: 'PostgreSQL',
    async create() {
      const { databaseUrl, drop } = await createPostgresDatabase();
      return { databaseUrl, dispose: drop };
    },
  },
];

/** What a kill round works with. */
interface RoundContext {
  round: string;
  baseUrl: string;
  app: CreatedApp;
  /** An admin token of this round, never revoked: it sends revoke-alls and revokes others' tokens. */
  operator: string;
  ledger: TokenLedger;
  /** SIGKILL to the server, now; returns once the signal is sent. */
  kill(): void;
}

/** Every background load running, so that a round that failed half-way still stops its own. */
const runningLoads = new Set<BackgroundLoad>();

/** Token requests of alternating kinds, revocations of some of the tokens, and revoke-alls every so often. */
class BackgroundLoad {
  readonly #loads: Load[] = [];
  readonly #toRevoke: IssuedToken[] = [];

  constructor(private readonly context: RoundContext) {
    runningLoads.add(this);
  }

  start(options: { revokeAllEveryMs?: number } = {}): this {
    const { baseUrl, app, ledger, round, operator } = this.context;
    const issuers = new Load();
    let count = 0;
    issuers.start(
      4,
      async () => {
        const kind: TokenKind = count++ % 2 === 0 ? 'admin' : 'anonymous';
        const outcome = await (kind === 'admin' ? adminTokenRequest(baseUrl, app) : anonymousTokenRequest(baseUrl, app));
        const issued = ledger.recordIssue(kind, round, outcome);
        if (issued !== undefined && Math.random() < 0.3) {
          ledger.claim(issued);
          this.#toRevoke.push(issued);
        }
      },
      2,
    );
    const revokers = new Load();
    revokers.start(
      2,
      async () => {
        const target = this.#toRevoke.shift();
        if (target === undefined) return sleep(5);
        // Mostly the token revoking itself; some by the admin token.
        const by = Math.random() < 0.25 ? operator : target.token;
        ledger.recordRevocation(round, target, await revokeRequest(baseUrl, app.appId, target.token, by));
      },
      2,
    );
    this.#loads.push(issuers, revokers);
    if (options.revokeAllEveryMs !== undefined) {
      const revokeAlls = new Load();
      revokeAlls.start(1, async () => {
        await sleep(options.revokeAllEveryMs! * (0.5 + Math.random()));
        if (revokeAlls.running) ledger.recordRevokeAll(round, await revokeAllRequest(baseUrl, app.appId, operator, 'anonymous'));
      });
      this.#loads.push(revokeAlls);
    }
    return this;
  }

  async stop(): Promise<void> {
    runningLoads.delete(this);
    await Promise.all(this.#loads.map((load) => load.stop()));
    for (const load of this.#loads) assert.deepEqual(load.crashes, [], 'an iteration of the load threw');
  }
}

/** Resolves when `count` of `requests` have been answered 200 (the others may still be in flight). */
function whenAnswered200(requests: Promise<Outcome>[], count: number): Promise<void> {
  return new Promise((resolve) => {
    let answered = 0;
    for (const request of requests) {
      void request.then((outcome) => {
        if (outcome.status === 200 && ++answered === count) resolve();
      });
    }
    void Promise.all(requests).then(() => resolve());
  });
}

/**
 * Until the load has had `count` more tokens answered 200, at most 10 s (the round then says how
 * many it had): on a busy machine, a fixed wait may see too few.
 */
async function untilIssued(context: RoundContext, count: number): Promise<void> {
  const target = context.ledger.issued.length + count;
  const deadline = now() + 10_000;
  while (context.ledger.issued.length < target && now() < deadline) await sleep(20);
}

interface KillPoint {
  name: string;
  /** Runs the load and kills the server at this point; returns what was happening when it did. */
  run(context: RoundContext): Promise<string>;
}

const KILL_POINTS: KillPoint[] = [
  {
    name: 'right after a burst of token requests',
    async run(context) {
      const load = new BackgroundLoad(context).start({ revokeAllEveryMs: 150 });
      await sleep(300);
      const requests = Array.from({ length: 160 }, (_, index) => {
        const kind: TokenKind = index % 2 === 0 ? 'admin' : 'anonymous';
        return (
          kind === 'admin' ? adminTokenRequest(context.baseUrl, context.app) : anonymousTokenRequest(context.baseUrl, context.app)
        ).then((outcome) => {
          context.ledger.recordIssue(kind, context.round, outcome);
          return outcome;
        });
      });
      await whenAnswered200(requests, 80);
      context.kill();
      const outcomes = await Promise.all(requests);
      await load.stop();
      return `after 80 of 160 concurrent token requests were answered 200 (${outcomes.filter((outcome) => outcome.status === 200).length} answered 200 in all)`;
    },
  },
  {
    name: 'during concurrent revocations',
    async run(context) {
      const issuedBefore = context.ledger.issued.length;
      const load = new BackgroundLoad(context).start();
      await sleep(300);
      // The kill must find token traffic of this round (the check after it asks for 20 tokens): on a
      // machine busy with other tests, 300 ms of the load may not have made them yet.
      for (let waited = 0; context.ledger.issued.length - issuedBefore < 25 && waited < 5_000; waited += 50) await sleep(50);
      // Tokens of every round so far, tokens issued before an earlier crash included, and more if
      // there are not enough of them.
      const candidates = () => context.ledger.unclaimed().filter((issued) => !operators.has(issued.token));
      for (let attempt = 0; attempt < 5 && candidates().length < 160; attempt++) {
        await Promise.all(
          Array.from({ length: 40 }, async (_, index) => {
            const kind: TokenKind = index % 2 === 0 ? 'admin' : 'anonymous';
            const request =
              kind === 'admin' ? adminTokenRequest(context.baseUrl, context.app) : anonymousTokenRequest(context.baseUrl, context.app);
            context.ledger.recordIssue(kind, context.round, await request);
          }),
        );
      }
      const targets = candidates()
        .sort(() => Math.random() - 0.5)
        .slice(0, 160);
      for (const target of targets) context.ledger.claim(target);
      assert.ok(targets.length >= 40, `only ${targets.length} tokens to revoke`);
      const requests = targets.map((target, index) =>
        revokeRequest(context.baseUrl, context.app.appId, target.token, index % 4 === 0 ? context.operator : target.token).then(
          (outcome) => {
            context.ledger.recordRevocation(context.round, target, outcome);
            return outcome;
          },
        ),
      );
      const half = Math.floor(targets.length / 2);
      await whenAnswered200(requests, half);
      context.kill();
      const outcomes = await Promise.all(requests);
      await load.stop();
      return `after ${half} of ${targets.length} concurrent revocations were answered 200 (${outcomes.filter((outcome) => outcome.status === 200).length} answered 200 in all)`;
    },
  },
  {
    name: 'the moment a revoke-all of anonymous tokens is answered',
    async run(context) {
      const load = new BackgroundLoad(context).start();
      await untilIssued(context, 25);
      const outcome = await revokeAllRequest(context.baseUrl, context.app.appId, context.operator, 'anonymous');
      context.kill();
      context.ledger.recordRevokeAll(context.round, outcome);
      await load.stop();
      assert.equal(outcome.status, 200, `the revoke-all: ${outcome.text}`);
      return `as the revoke-all's 200 arrived (it removed ${outcome.body?.revoked} tokens), with token requests and revocations in flight`;
    },
  },
  {
    name: 'while a revoke-all of anonymous tokens is in flight',
    async run(context) {
      const load = new BackgroundLoad(context).start();
      await untilIssued(context, 25);
      const delayMs = Math.random() * 5;
      const request = revokeAllRequest(context.baseUrl, context.app.appId, context.operator, 'anonymous');
      await sleep(delayMs);
      context.kill();
      const outcome = await request;
      context.ledger.recordRevokeAll(context.round, outcome);
      await load.stop();
      return `${delayMs.toFixed(1)} ms after the revoke-all was sent (it got ${outcome.status === 0 ? 'no answer' : outcome.status})`;
    },
  },
  {
    name: 'at a random moment of the steady load',
    async run(context) {
      const load = new BackgroundLoad(context).start({ revokeAllEveryMs: 200 });
      const startedAt = now();
      await untilIssued(context, 25);
      await sleep(Math.random() * 700);
      context.kill();
      await load.stop();
      return `${Math.round(now() - startedAt)} ms into the load`;
    },
  },
];

/** Admin tokens the rounds send revoke-alls with: never revoked by the load. */
const operators = new Set<string>();

for (const backend of BACKENDS) {
  describe(`kill -9 under load: ${backend.name}`, () => {
    let store: Awaited<ReturnType<Backend['create']>> | undefined;
    let app: CreatedApp;
    let server: ServerProcess | undefined;
    const ledger = new TokenLedger();
    const restarts: number[] = [];
    let firstStartMs = 0;
    const options = () => ({ entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: store!.databaseUrl, env: SERVER_ENV });

    before(async () => {
      store = await backend.create();
      app = await createAppWithCli(children, options(), 'Crash');
      const startedAt = now();
      server = await startTessera(children, options());
      firstStartMs = Math.round(now() - startedAt);
    });

    after(async () => {
      await Promise.all([...runningLoads].map((load) => load.stop().catch(() => {})));
      await children.killAll();
      await store?.dispose();
      const states = { valid: 0, refused: 0, either: 0 };
      for (const issued of ledger.issued) states[ledger.expect(issued).state]++;
      console.log(
        `[crash] ${backend.name}: ${ledger.issued.length} tokens answered 200 (${JSON.stringify(states)}), ` +
          `${ledger.revocations.filter((revocation) => revocation.outcome.status === 200).length} revocations answered 200, ` +
          `${ledger.revokeAlls.filter((revokeAll) => revokeAll.outcome.status === 200).length} revoke-alls answered 200; ` +
          `first start ${firstStartMs} ms, restarts took ${restarts.map((ms) => `${ms} ms`).join(', ')}\n[crash] ${backend.name} answers: ${JSON.stringify(Object.fromEntries(ledger.tally))}`,
      );
    });

    for (const [index, killPoint] of KILL_POINTS.entries()) {
      const round = `kill ${index + 1} (${killPoint.name})`;
      it(`${round}: every answered token and revocation survives, and the store opens cleanly`, async () => {
        server ??= await startTessera(children, options());
        const running = server;
        const operatorOutcome = await adminTokenRequest(running.baseUrl, app);
        const operator = ledger.recordIssue('admin', round, operatorOutcome);
        assert.ok(operator !== undefined, `the round's admin token: ${operatorOutcome.status} ${operatorOutcome.text}`);
        operators.add(operator.token);
        const issuedBefore = ledger.issued.length;
        const revokedBefore = ledger.revocations.length;
        const unexpectedBefore = ledger.unexpected.length;

        let killedAt = 0;
        const kill = () => {
          killedAt = now();
          running.child.kill('SIGKILL');
        };
        let moment: string;
        try {
          moment = await killPoint.run({ round, baseUrl: running.baseUrl, app, operator: operator.token, ledger, kill });
        } finally {
          await Promise.all([...runningLoads].map((load) => load.stop().catch(() => {})));
        }
        const exit = await running.exited;
        server = undefined;
        assert.equal(exit.signal, 'SIGKILL', `the server was not killed by the test: ${JSON.stringify(exit)}; stderr: ${running.stderr()}`);

        // The last round checks the crashed SQLite file itself; the others let the server recover it.
        const last = index === KILL_POINTS.length - 1;
        if (last && store!.integrity !== undefined) assert.deepEqual(store!.integrity(), ['ok'], 'integrity_check of the crashed file');

        const startedAt = now();
        server = await startTessera(children, options());
        const restartMs = Math.round(now() - startedAt);
        restarts.push(restartMs);
        const limitMs = Math.max(RESTART_LIMIT_MS, RESTART_TIMES_FIRST_START * firstStartMs);
        assert.ok(restartMs < limitMs, `the restart took ${restartMs} ms, the first start ${firstStartMs} ms (limit ${limitMs} ms)`);

        const verification = await verifyTokens(server.baseUrl, app, ledger, round);
        const issuedThisRound = ledger.issued.length - issuedBefore;
        const revocationsThisRound = ledger.revocations.slice(revokedBefore);
        console.log(
          `[crash] ${backend.name}, ${round}: killed ${moment}; ${issuedThisRound} tokens answered 200 and ` +
            `${revocationsThisRound.filter((revocation) => revocation.outcome.status === 200).length} revocations answered 200 this round; ` +
            `restart ${restartMs} ms; checked ${ledger.issued.length} tokens in ${verification.ms} ms: expected ${JSON.stringify(verification.counts)}, ` +
            `found ${JSON.stringify(verification.found)}${verification.unansweredRevokeAlls.map((line) => `; ${line}`).join('')}`,
        );
        assert.deepEqual(
          verification.problems.slice(0, 20),
          [],
          `${verification.problems.length} tokens not as answered before the kill at ${Math.round(killedAt)} ms`,
        );
        assert.ok(issuedThisRound >= 20, `only ${issuedThisRound} tokens were answered 200 before the kill`);
        if (store!.integrity !== undefined) assert.deepEqual(store!.integrity(), ['ok'], 'integrity_check after the restart');
        assert.equal(server.stderr(), '', 'the restarted server wrote to stderr');
        assert.deepEqual(errorLogLines(server.stdout()), [], 'the restarted server logged errors');
        const unexpected = ledger.unexpected.slice(unexpectedBefore);
        assert.deepEqual(unexpected.slice(0, 20), [], `${unexpected.length} unexpected answers before the kill`);
      });
    }
  });
}

/** Log lines at level error (50) or above. */
function errorLogLines(stdout: string): string[] {
  return stdout.split('\n').filter((line) => {
    try {
      return (JSON.parse(line) as { level?: number }).level! >= 50;
    } catch {
      return false;
    }
  });
}
