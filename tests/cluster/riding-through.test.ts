import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { revokeRequest } from '../helpers/crash.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  call,
  childrenOfFile,
  cleanupsAfterAll,
  createAppWithCli,
  describeOutcome,
  now,
  sleep,
  startTessera,
  terminate,
  unavailableProblems,
  whoami,
  type Outcome,
} from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_MAIN } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// Riding through an outage with what is in memory, within PG_STALE_LIMIT_MS: two instances on one
// PostgreSQL database, one of them (A) behind a proxy that the test cuts, so that A is cut off while
// the other (B) is not, the worst case for the bound. While A is cut off, what it cached keeps being
// served and anonymous tokens keep being issued, until its last proof that it hears changes is
// PG_STALE_LIMIT_MS old; a token revoked on B meanwhile is refused by A at the latest by then; past
// it, A answers 503 and /readyz takes it out. Once the database is back, A serves again by itself.

const STALE_LIMIT_MS = 4_000;
/** Timers and a loaded machine: how late a deadline may be seen to pass. */
const SLACK_MS = 300;

const children = childrenOfFile();
const cleanup = cleanupsAfterAll();

describe(`riding through a database outage within PG_STALE_LIMIT_MS (${STALE_LIMIT_MS} ms)`, () => {
  it(
    'cut off while another instance is not: cached grants and anonymous tokens served within the bound, a revocation elsewhere enforced by it, 503 after it',
    { timeout: 60_000 },
    async () => {
      const database = await createPostgresDatabase();
      cleanup(() => database.drop());
      const proxy = TcpProxy.toDatabase(database.databaseUrl);
      await proxy.start();
      cleanup(() => proxy.cut());
      const env = { PG_CONNECT_TIMEOUT_MS: '500', PG_QUERY_TIMEOUT_MS: '1000', PG_STALE_LIMIT_MS: String(STALE_LIMIT_MS) };
      const a = await startTessera(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: proxy.urlFor(database.databaseUrl), env });
      const b = await startTessera(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: database.databaseUrl, env });
      const app = await createAppWithCli(
        children,
        { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: database.databaseUrl },
        'Riding through',
      );

      const issue = async (request: Promise<Outcome>) => {
        const outcome = await request;
        assert.equal(outcome.status, 200, `${describeOutcome(outcome)} ${outcome.text}`);
        return outcome.body.access_token as string;
      };
      const kept = await issue(adminTokenRequest(a.baseUrl, app));
      const revoked = await issue(adminTokenRequest(a.baseUrl, app));
      const anonymous = await issue(anonymousTokenRequest(a.baseUrl, app));
      // A has seen them all: they are in its caches.
      for (const token of [kept, revoked, anonymous]) assert.equal((await whoami(a.baseUrl, app.appId, token)).status, 200);

      const cutAt = now();
      await proxy.cut();
      const revocation = await revokeRequest(b.baseUrl, app.appId, revoked, kept);
      const revokedAt = now();
      assert.equal(revocation.status, 200, `the revocation on B: ${describeOutcome(revocation)} ${revocation.text}`);
      assert.equal((await whoami(b.baseUrl, app.appId, revoked)).status, 401, 'B enforces its own revocation at once');

      type Kind = 'kept' | 'revoked' | 'anonymous' | 'new anonymous token' | 'new admin token' | 'readyz';
      const samples: { kind: Kind; outcome: Outcome }[] = [];
      const until = cutAt + STALE_LIMIT_MS + 2_000;
      while (now() < until) {
        const round = await Promise.all([
          whoami(a.baseUrl, app.appId, kept).then((outcome) => ({ kind: 'kept' as const, outcome })),
          whoami(a.baseUrl, app.appId, revoked).then((outcome) => ({ kind: 'revoked' as const, outcome })),
          whoami(a.baseUrl, app.appId, anonymous).then((outcome) => ({ kind: 'anonymous' as const, outcome })),
          anonymousTokenRequest(a.baseUrl, app).then((outcome) => ({ kind: 'new anonymous token' as const, outcome })),
          adminTokenRequest(a.baseUrl, app).then((outcome) => ({ kind: 'new admin token' as const, outcome })),
          call(`${a.baseUrl}/readyz`).then((outcome) => ({ kind: 'readyz' as const, outcome })),
        ]);
        samples.push(...round);
        await sleep(100);
      }

      const problems: string[] = [];
      const show = (kind: Kind, outcome: Outcome) =>
        `${kind} sent ${Math.round(outcome.sentAt - cutAt)} ms after the cut: ${describeOutcome(outcome)} ${outcome.text.slice(0, 160)}`;
      // The last proof came before the cut, so A trusts its caches until cutAt + STALE_LIMIT_MS at the latest,
      // and (with heartbeats every second) not before cutAt + STALE_LIMIT_MS - 1 s.
      const trustedAtLeastUntil = cutAt + STALE_LIMIT_MS - 1_000 - SLACK_MS;
      const trustedAtMostUntil = cutAt + STALE_LIMIT_MS + SLACK_MS;
      for (const { kind, outcome } of samples) {
        const within = outcome.receivedAt < trustedAtLeastUntil;
        const past = outcome.sentAt > trustedAtMostUntil;
        if (outcome.status !== 200 && unavailableProblems(outcome).length > 0 && !(kind === 'revoked' && outcome.status === 401)) {
          problems.push(`neither 200 nor a proper 503: ${show(kind, outcome)}`);
          continue;
        }
        switch (kind) {
          case 'kept':
          case 'anonymous':
          case 'new anonymous token':
            if (within && outcome.status !== 200) problems.push(`not served from memory within the bound: ${show(kind, outcome)}`);
            if (past && outcome.status !== 503) problems.push(`served past the bound: ${show(kind, outcome)}`);
            break;
          case 'revoked':
            // The bound: a revocation acknowledged elsewhere is enforced here within PG_STALE_LIMIT_MS.
            if (outcome.sentAt > revokedAt + STALE_LIMIT_MS + SLACK_MS && outcome.status === 200) {
              problems.push(`a token revoked on B still served by A past the bound: ${show(kind, outcome)}`);
            }
            break;
          case 'new admin token':
            // It must be stored: nothing to ride through with.
            if (outcome.status !== 503) problems.push(`an admin token issued while the database is unreachable: ${show(kind, outcome)}`);
            break;
          case 'readyz':
            if (outcome.status === 200 && outcome.body?.database !== 'unreachable')
              problems.push(`ready, and not saying the database is unreachable: ${show(kind, outcome)}`);
            if (within && outcome.status !== 200) problems.push(`taken out of the load balancer within the bound: ${show(kind, outcome)}`);
            if (past && outcome.status !== 503) problems.push(`ready past the bound: ${show(kind, outcome)}`);
            break;
        }
      }
      assert.deepEqual(problems.slice(0, 12), [], `${problems.length} problems`);
      for (const kind of ['kept', 'new anonymous token', 'readyz'] as Kind[]) {
        const served = samples.filter((sample) => sample.kind === kind && sample.outcome.status === 200).length;
        const refused = samples.filter((sample) => sample.kind === kind && sample.outcome.status === 503).length;
        assert.ok(
          served >= 5 && refused >= 5,
          `${kind}: ${served} served within the bound and ${refused} refused past it; the check would be empty`,
        );
      }
      const stale = samples.filter((sample) => sample.kind === 'readyz' && sample.outcome.status === 200).at(-1);
      assert.match(stale?.outcome.body?.problem ?? '', /lost|heartbeat|answer/, 'readyz says why changes are not heard');
      assert.match(a.stdout(), /PG_STALE_LIMIT_MS/, 'the log says that caches are no longer trusted, and why');

      // The database is back: A serves again by itself, with B's revocation.
      await proxy.restore();
      const backBy = now() + 15_000;
      let fresh: Outcome;
      do {
        await sleep(250);
        fresh = await adminTokenRequest(a.baseUrl, app);
      } while (fresh.status !== 200 && now() < backBy);
      assert.equal(fresh.status, 200, `A serves again: ${describeOutcome(fresh)} ${fresh.text}`);
      assert.equal((await whoami(a.baseUrl, app.appId, kept)).status, 200);
      assert.equal((await whoami(a.baseUrl, app.appId, revoked)).status, 401, 'B’s revocation, on A');
      for (const server of [a, b]) {
        assert.deepEqual(await terminate(server), { code: 0, signal: null }, server.stderr());
        assert.doesNotMatch(server.stderr(), /uncaught|unhandled/i);
      }
    },
  );
});
