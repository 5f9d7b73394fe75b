import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { errorProblems } from '../helpers/assert.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  ChangeWatcher,
  Children,
  createAppWithCli,
  describeOutcome,
  Load,
  now,
  runCli,
  sleep,
  startTessera,
  startTesseras,
  whoami,
  type CreatedApp,
  type Outcome,
} from '../helpers/fleet.js';
import { ANONYMOUS_TOKEN_LENGTH } from 'tessera-tokens/internal/tokens/anonymous-token.js';
import { signingKeyIdOf } from '../helpers/http.js';
import { OPERATOR } from '../../src/request-context.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

// Three `tessera serve` processes over one PostgreSQL database, changed by the CLI (a fourth
// process) while a steady load runs against all three: what one instance or the CLI changes, every
// instance honours within a second, through LISTEN/NOTIFY rather than the 250 ms fallback flush.

/** What an instance logs when it loses its notification connection, and when it stops trusting its caches. */
const FALLBACK_WARNINGS = ['lost the database notification connection', 'caches are emptied every'];

const children = new Children();
process.once('exit', () => children.killAllNow());

/** Runs every step, even after one failed; then throws the first failure. */
async function runAll(steps: (() => Promise<unknown>)[]): Promise<void> {
  let first: Error | undefined;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      first ??= error instanceof Error ? error : new Error(String(error));
    }
  }
  if (first !== undefined) throw first;
}

function isAdminWhoami(outcome: Outcome, app: CreatedApp): boolean {
  const body = outcome.body;
  return (
    outcome.status === 200 &&
    body?.appId === app.appId &&
    body?.principal === 'admin' &&
    body?.id === app.adminId &&
    body?.auth === 'bearer'
  );
}

function isAnonymousWhoami(outcome: Outcome, app: CreatedApp, auth: 'basic' | 'bearer'): boolean {
  const body = outcome.body;
  return (
    outcome.status === 200 &&
    body?.appId === app.appId &&
    body?.principal === 'anonymous' &&
    body?.id === 'ANONYMOUS' &&
    body?.auth === auth
  );
}

function isToken(outcome: Outcome, id: string): boolean {
  const body = outcome.body;
  return outcome.status === 200 && body?.id === id && typeof body?.access_token === 'string' && body?.token_type === 'bearer';
}

/** One answer awaited: when it was sent and received (ms after `since`), its status and, for a token, the key that signed it. */
function describeTrailStep(outcome: Outcome, since: number): string {
  const token = outcome.body?.access_token;
  // A stored token (while the store is not finalized for self-verifying ones) has no key id.
  const key = typeof token !== 'string' ? '' : token.length === ANONYMOUS_TOKEN_LENGTH ? ` key ${signingKeyIdOf(token)}` : ' stored token';
  return `[${Math.round(outcome.sentAt - since)}–${Math.round(outcome.receivedAt - since)} ms: ${outcome.status}${key}]`;
}

function show(outcome: Outcome): string {
  return `${describeOutcome(outcome)} ${outcome.text.slice(0, 300)}`;
}

describe('many instances on one PostgreSQL', () => {
  let database: { databaseUrl: string; drop(): Promise<void> } | undefined;
  let instances: ServerProcess[] = [];
  const watcher = new ChangeWatcher();
  const load = new Load();
  /** Every load a test starts, so that after() stops them even when the test failed half-way. */
  const loads = new Set<Load>([load]);
  const newLoad = () => {
    const created = new Load();
    loads.add(created);
    return created;
  };
  /** Every background outcome, by "status code", and the ones that were not the expected 200. */
  const tally = new Map<string, number>();
  const unexpected: string[] = [];
  const latencies: string[] = [];

  const cliOptions = () => ({ entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: database!.databaseUrl });
  const cli = (args: string[]) => runCli(children, cliOptions(), args);
  const createApp = (name: string) => createAppWithCli(children, cliOptions(), name);

  before(async () => {
    database = await createPostgresDatabase();
    // Started together: their migrations take turns under the advisory lock.
    instances = await startTesseras(children, 3, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: database.databaseUrl });
    await watcher.start(database.databaseUrl);

    // The background load: an app nobody changes, used on all three instances with Basic, with
    // tokens issued by another instance, and for new tokens. Everything must be 200, always.
    const steady = await createApp('Steady');
    const issued = await Promise.all(instances.map((instance) => adminTokenRequest(instance.baseUrl, steady)));
    const anonymous = await Promise.all(instances.map((instance) => anonymousTokenRequest(instance.baseUrl, steady)));
    for (const outcome of [...issued, ...anonymous]) assert.equal(outcome.status, 200, show(outcome));
    const adminTokens = issued.map((outcome) => outcome.body.access_token as string);
    const anonymousTokens = anonymous.map((outcome) => outcome.body.access_token as string);

    const step = new Map<number, number>();
    load.start(
      6,
      async (loop) => {
        const index = loop % instances.length;
        const other = (index + 1) % instances.length;
        const baseUrl = instances[index]!.baseUrl;
        const n = step.get(loop) ?? 0;
        step.set(loop, n + 1);
        let outcome: Outcome;
        let ok: boolean;
        switch (n % 5) {
          case 0:
            outcome = await whoami(baseUrl, steady.appId, undefined);
            ok = isAnonymousWhoami(outcome, steady, 'basic');
            break;
          case 1:
            outcome = await whoami(baseUrl, steady.appId, adminTokens[other]);
            ok = isAdminWhoami(outcome, steady);
            break;
          case 2:
            outcome = await whoami(baseUrl, steady.appId, anonymousTokens[other]);
            ok = isAnonymousWhoami(outcome, steady, 'bearer');
            break;
          case 3:
            outcome = await adminTokenRequest(baseUrl, steady);
            ok = isToken(outcome, steady.adminId);
            break;
          default:
            outcome = await anonymousTokenRequest(baseUrl, steady);
            ok = isToken(outcome, 'ANONYMOUS');
        }
        const key = describeOutcome(outcome);
        tally.set(key, (tally.get(key) ?? 0) + 1);
        if (!ok) unexpected.push(`instance ${index}, step ${n % 5}: ${show(outcome)}`);
      },
      5,
    );
  });

  after(async () => {
    await runAll([
      () => Promise.all([...loads].map((each) => each.stop())),
      () => watcher.stop(),
      () => children.killAll(),
      async () => database?.drop(),
    ]);
  });

  it('an app created through the CLI gets admin and anonymous tokens at once on every instance', async () => {
    const app = await createApp('Fresh');
    // No retry: the first request after the CLI returned must succeed on each instance.
    const outcomes = await Promise.all(
      instances.flatMap((instance) => [
        adminTokenRequest(instance.baseUrl, app),
        anonymousTokenRequest(instance.baseUrl, app),
        whoami(instance.baseUrl, app.appId, undefined),
      ]),
    );
    instances.forEach((_, index) => {
      const [admin, anonymous, basicWhoami] = outcomes.slice(index * 3, index * 3 + 3) as [Outcome, Outcome, Outcome];
      assert.ok(isToken(admin, app.adminId), `instance ${index}, admin token: ${show(admin)}`);
      assert.ok(isToken(anonymous, 'ANONYMOUS'), `instance ${index}, anonymous token: ${show(anonymous)}`);
      assert.ok(isAnonymousWhoami(basicWhoami, app, 'basic'), `instance ${index}, Basic whoami: ${show(basicWhoami)}`);
    });
  });

  it('a token issued by one instance works on every other instance', async () => {
    const app = await createApp('Shared tokens');
    for (const [index, issuer] of instances.entries()) {
      const admin = await adminTokenRequest(issuer.baseUrl, app);
      const anonymous = await anonymousTokenRequest(issuer.baseUrl, app);
      assert.ok(isToken(admin, app.adminId), show(admin));
      assert.ok(isToken(anonymous, 'ANONYMOUS'), show(anonymous));
      for (const [other, verifier] of instances.entries()) {
        const asAdmin = await whoami(verifier.baseUrl, app.appId, admin.body.access_token);
        const asAnonymous = await whoami(verifier.baseUrl, app.appId, anonymous.body.access_token);
        assert.ok(isAdminWhoami(asAdmin, app), `admin token of instance ${index} on instance ${other}: ${show(asAdmin)}`);
        assert.ok(
          isAnonymousWhoami(asAnonymous, app, 'bearer'),
          `anonymous token of instance ${index} on instance ${other}: ${show(asAnonymous)}`,
        );
      }
    }
  });

  it('a ClientSecret rotated through the CLI stops working on every instance within 1 s; the new one works; issued tokens keep working', async () => {
    const app = await createApp('Rotated');
    // Every instance uses the app with the old secret (so it has the app cached) and issues a token.
    const issued = await Promise.all(instances.map((instance) => adminTokenRequest(instance.baseUrl, app)));
    for (const outcome of issued) assert.ok(isToken(outcome, app.adminId), show(outcome));
    const tokens = issued.map((outcome) => outcome.body.access_token as string);

    // Meanwhile the same app is used anonymously on every instance: always 200, rotation or not.
    const churn = newLoad();
    const churnProblems: string[] = [];
    churn.start(
      instances.length,
      async (index) => {
        const baseUrl = instances[index]!.baseUrl;
        const [token, basicWhoami] = await Promise.all([anonymousTokenRequest(baseUrl, app), whoami(baseUrl, app.appId, undefined)]);
        if (!isToken(token, 'ANONYMOUS')) churnProblems.push(`instance ${index}, anonymous token: ${show(token)}`);
        if (!isAnonymousWhoami(basicWhoami, app, 'basic')) churnProblems.push(`instance ${index}, Basic whoami: ${show(basicWhoami)}`);
      },
      10,
    );

    // Each instance is asked for an admin token with the old secret every 50 ms, until it refuses.
    const polls: Outcome[][] = instances.map(() => []);
    let stopPolling = false;
    const pollers = instances.map(async (instance, index) => {
      while (!stopPolling) {
        const outcome = await adminTokenRequest(instance.baseUrl, app);
        polls[index]!.push(outcome);
        if (outcome.status !== 200) return;
        await sleep(50);
      }
    });

    const startedAt = now();
    let rotated;
    try {
      rotated = await cli(['apps', 'rotate-secret', app.appId, '--json']);
    } finally {
      // Long enough for "within 1 s" to fail visibly rather than by a timeout.
      setTimeout(() => (stopPolling = true), 2_000).unref();
    }
    await Promise.all(pollers);
    await churn.stop();
    assert.equal(rotated.code, 0, rotated.stderr);
    const newSecret = JSON.parse(rotated.stdout).clientSecret as string;
    assert.notEqual(newSecret, app.clientSecret);

    const notifiedAt = watcher.firstAt(app.appId, startedAt);
    assert.ok(notifiedAt !== undefined, 'the rotation sent no notification on tessera_changes');
    const figures: string[] = [];
    for (const [index, list] of polls.entries()) {
      const last = list.at(-1)!;
      const before = list.slice(0, -1);
      for (const outcome of before)
        assert.ok(isToken(outcome, app.adminId), `instance ${index}, old secret before the refusal: ${show(outcome)}`);
      assert.deepEqual(errorProblems(last, 401, 'invalid_client'), [], `instance ${index}, old secret: ${show(last)}`);
      const upper = Math.round(last.receivedAt - notifiedAt);
      const lastAccepted = before.at(-1);
      const lower = lastAccepted === undefined ? undefined : Math.round(lastAccepted.sentAt - notifiedAt);
      figures.push(
        `instance ${index}: refused ≤ ${upper} ms after the NOTIFY reached the test (last accepted request sent at ${lower ?? '-'} ms)`,
      );
      assert.ok(upper < 1_000, `instance ${index} accepted the old secret until ${upper} ms after the change`);
    }
    latencies.push(
      `rotation (CLI returned ${Math.round(rotated.exitedAt - notifiedAt)} ms after the NOTIFY):`,
      ...figures.map((line) => `  ${line}`),
    );
    console.log(`[instances] ${latencies.slice(-1 - figures.length).join('\n')}`);

    // Refused everywhere, again and again (no stale copy of the app comes back); the new secret works
    // everywhere; tokens issued before keep working (there is no revocation).
    for (let round = 0; round < 5; round++) {
      const outcomes = await Promise.all(instances.map((instance) => adminTokenRequest(instance.baseUrl, app)));
      for (const [index, outcome] of outcomes.entries()) {
        assert.deepEqual(
          errorProblems(outcome, 401, 'invalid_client'),
          [],
          `round ${round}, instance ${index}, old secret: ${show(outcome)}`,
        );
      }
      await sleep(50);
    }
    for (const [index, instance] of instances.entries()) {
      const outcome = await adminTokenRequest(instance.baseUrl, { ...app, clientSecret: newSecret });
      assert.ok(isToken(outcome, app.adminId), `instance ${index}, new secret: ${show(outcome)}`);
      for (const [issuer, token] of tokens.entries()) {
        const check = await whoami(instance.baseUrl, app.appId, token);
        assert.ok(isAdminWhoami(check, app), `instance ${index}, token issued by instance ${issuer} before the rotation: ${show(check)}`);
      }
    }
    assert.deepEqual(churnProblems, [], 'anonymous use of the app during the rotation');
  });

  it('an app deleted through the CLI is gone on every instance within 1 s, for cached tokens and for Basic', async () => {
    const app = await createApp('Deleted');
    // Each instance issues tokens, and every instance uses every token (so all of them are cached everywhere).
    const tokens: string[] = [];
    for (const instance of instances) {
      const admin = await adminTokenRequest(instance.baseUrl, app);
      const anonymous = await anonymousTokenRequest(instance.baseUrl, app);
      assert.ok(isToken(admin, app.adminId), show(admin));
      assert.ok(isToken(anonymous, 'ANONYMOUS'), show(anonymous));
      tokens.push(admin.body.access_token, anonymous.body.access_token);
    }
    for (const [index, instance] of instances.entries()) {
      for (const token of tokens) {
        const outcome = await whoami(instance.baseUrl, app.appId, token);
        assert.equal(outcome.status, 200, `instance ${index}: ${show(outcome)}`);
      }
      const basicWhoami = await whoami(instance.baseUrl, app.appId, undefined);
      assert.ok(isAnonymousWhoami(basicWhoami, app, 'basic'), show(basicWhoami));
    }

    // Anonymous use during the deletion: 200, then 404 APP_NOT_FOUND; never 200 again once refused.
    const churn = newLoad();
    const churnProblems: string[] = [];
    const churnGone = new Set<number>();
    churn.start(
      instances.length,
      async (index) => {
        const baseUrl = instances[index]!.baseUrl;
        const outcomes = await Promise.all([anonymousTokenRequest(baseUrl, app), whoami(baseUrl, app.appId, undefined)]);
        // The two run at once: judge them in the order they were answered.
        for (const outcome of outcomes.sort((a, b) => a.receivedAt - b.receivedAt)) {
          if (outcome.status === 200 && !churnGone.has(index)) continue;
          if (errorProblems(outcome, 404, 'APP_NOT_FOUND').length === 0) {
            churnGone.add(index);
            continue;
          }
          churnProblems.push(`instance ${index}${churnGone.has(index) ? ' (after a 404)' : ''}: ${show(outcome)}`);
        }
      },
      10,
    );

    // Each instance: a token it cached (issued by the next instance) and Basic, every 50 ms, until
    // both are 404. A bearer token may be refused as INVALID_TOKEN first, never after a 404.
    interface Poll {
      bearer: Outcome;
      basic: Outcome;
    }
    const polls: Poll[][] = instances.map(() => []);
    let stopPolling = false;
    const pollers = instances.map(async (instance, index) => {
      const token = tokens[((index + 1) % instances.length) * 2]!;
      while (!stopPolling) {
        const [bearerOutcome, basicOutcome] = await Promise.all([
          whoami(instance.baseUrl, app.appId, token),
          whoami(instance.baseUrl, app.appId, undefined),
        ]);
        polls[index]!.push({ bearer: bearerOutcome, basic: basicOutcome });
        if (bearerOutcome.status === 404 && basicOutcome.status === 404) return;
        await sleep(50);
      }
    });

    const startedAt = now();
    let deleted;
    try {
      deleted = await cli(['apps', 'delete', app.appId, '--json']);
    } finally {
      setTimeout(() => (stopPolling = true), 2_000).unref();
    }
    await Promise.all(pollers);
    assert.equal(deleted.code, 0, deleted.stderr);
    const notifiedAt = watcher.firstAt(app.appId, startedAt);
    assert.ok(notifiedAt !== undefined, 'the deletion sent no notification on tessera_changes');

    const figures: string[] = [];
    for (const [index, list] of polls.entries()) {
      let bearerState: 'ok' | 'invalid' | 'gone' = 'ok';
      let basicState: 'ok' | 'gone' = 'ok';
      for (const { bearer, basic } of list) {
        if (errorProblems(bearer, 404, 'APP_NOT_FOUND').length === 0) bearerState = 'gone';
        else if (bearerState !== 'gone' && errorProblems(bearer, 401, 'INVALID_TOKEN').length === 0) bearerState = 'invalid';
        else
          assert.ok(
            bearerState === 'ok' && bearer.status === 200,
            `instance ${index}, cached token, after "${bearerState}": ${show(bearer)}`,
          );
        if (errorProblems(basic, 404, 'APP_NOT_FOUND').length === 0) basicState = 'gone';
        else
          assert.ok(
            basicState === 'ok' && isAnonymousWhoami(basic, app, 'basic'),
            `instance ${index}, Basic, after "${basicState}": ${show(basic)}`,
          );
      }
      const last = list.at(-1)!;
      assert.equal(bearerState, 'gone', `instance ${index}, cached token: ${show(last.bearer)}`);
      assert.equal(basicState, 'gone', `instance ${index}, Basic: ${show(last.basic)}`);
      const upper = Math.round(Math.max(last.bearer.receivedAt, last.basic.receivedAt) - notifiedAt);
      figures.push(`instance ${index}: 404 for the cached token and Basic ≤ ${upper} ms after the NOTIFY reached the test`);
      assert.ok(upper < 1_000, `instance ${index} still knew the deleted app ${upper} ms after the change`);
    }
    latencies.push(
      `deletion (CLI returned ${Math.round(deleted.exitedAt - notifiedAt)} ms after the NOTIFY):`,
      ...figures.map((line) => `  ${line}`),
    );
    console.log(`[instances] ${latencies.slice(-1 - figures.length).join('\n')}`);

    // From 1 s after the change on, nothing answers 200: every token, Basic and token requests are 404.
    await sleep(Math.max(0, notifiedAt + 1_000 - now()));
    await churn.stop();
    for (let round = 0; round < 3; round++) {
      for (const [index, instance] of instances.entries()) {
        const outcomes = await Promise.all([
          ...tokens.map((token) => whoami(instance.baseUrl, app.appId, token)),
          whoami(instance.baseUrl, app.appId, undefined),
          adminTokenRequest(instance.baseUrl, app),
          anonymousTokenRequest(instance.baseUrl, app),
        ]);
        for (const outcome of outcomes) {
          assert.deepEqual(errorProblems(outcome, 404, 'APP_NOT_FOUND'), [], `round ${round}, instance ${index}: ${show(outcome)}`);
        }
      }
      await sleep(100);
    }
    assert.deepEqual(churnProblems, [], 'anonymous use of the app during the deletion');
  });

  /** Polls `attempt` on every instance every 50 ms until `done`; returns how long after `since` each one took. */
  async function everyInstanceWithin(attempt: (baseUrl: string) => Promise<Outcome>, done: (outcome: Outcome) => boolean, since: number) {
    return Promise.all(
      instances.map(async (instance, index) => {
        // What the instance answered meanwhile, for a failure to tell a slow answer from a stale one.
        const trail: string[] = [];
        for (;;) {
          const outcome = await attempt(instance.baseUrl);
          const elapsed = outcome.receivedAt - since;
          trail.push(describeTrailStep(outcome, since));
          if (done(outcome)) return { index, elapsed, outcome, trail };
          if (elapsed > 2_000)
            assert.fail(
              `instance ${index} still answered ${show(outcome)} ${Math.round(elapsed)} ms after the change; ${trail.join(', ')}`,
            );
          await sleep(50);
        }
      }),
    );
  }

  const post = (url: string, authorization: string, body: unknown, method = 'POST') =>
    fetch(url, { method, headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('a token revoked through one instance, or all tokens of a kind, are refused by every instance within 1 s', async () => {
    const app = await createApp('Revoked everywhere');
    const admin = (await adminTokenRequest(instances[0]!.baseUrl, app)).body.access_token as string;
    const victim = (await anonymousTokenRequest(instances[1]!.baseUrl, app)).body.access_token as string;
    const others = await Promise.all(instances.map((instance) => anonymousTokenRequest(instance.baseUrl, app)));
    // Every instance has both tokens in its cache.
    for (const instance of instances) {
      assert.ok(isAnonymousWhoami(await whoami(instance.baseUrl, app.appId, victim), app, 'bearer'));
      for (const other of others) assert.equal((await whoami(instance.baseUrl, app.appId, other.body.access_token)).status, 200);
    }

    let since = now();
    const revoked = await post(`${instances[2]!.baseUrl}/api/apps/${app.appId}/oauth2/revoke`, `Bearer ${admin}`, { token: victim });
    assert.equal(revoked.status, 200);
    let results = await everyInstanceWithin(
      (baseUrl) => whoami(baseUrl, app.appId, victim),
      (outcome) => outcome.status === 401,
      since,
    );
    for (const { index, elapsed, outcome } of results) {
      assert.deepEqual(errorProblems(outcome, 401, 'INVALID_TOKEN'), [], `instance ${index}: ${show(outcome)}`);
      assert.ok(elapsed < 1_000, `instance ${index} accepted the revoked token until ${Math.round(elapsed)} ms after the revocation`);
    }
    latencies.push(`revocation of one token: refused after ${results.map((result) => Math.round(result.elapsed)).join(', ')} ms`);

    since = now();
    const all = await post(`${instances[0]!.baseUrl}/api/apps/${app.appId}/tokens?kind=anonymous`, `Bearer ${admin}`, undefined, 'DELETE');
    assert.equal(all.status, 200);
    for (const other of others) {
      results = await everyInstanceWithin(
        (baseUrl) => whoami(baseUrl, app.appId, other.body.access_token),
        (outcome) => outcome.status === 401,
        since,
      );
      for (const { index, elapsed } of results) assert.ok(elapsed < 1_000, `instance ${index}: ${Math.round(elapsed)} ms`);
    }
    for (const instance of instances)
      assert.ok(isAdminWhoami(await whoami(instance.baseUrl, app.appId, admin), app), 'admin tokens are kept');
  });

  it("a key rotated through the CLI signs on every instance within 1 s; a retired key's tokens are refused by every instance within 1 s", async () => {
    const app = await createApp('Keys everywhere');
    const anonymousOf = async (baseUrl: string) => (await anonymousTokenRequest(baseUrl, app)).body.access_token as string;
    const rotate = async () => {
      const rotated = await cli(['keys', 'rotate', '--json']);
      assert.equal(rotated.code, 0, rotated.stderr);
      return (JSON.parse(rotated.stdout) as { id: number; state: string }[]).find((key) => key.state === 'signing')!.id;
    };

    // The steady load keeps using tokens of the first key throughout: rotations never end them.
    // Measured from the CLI's exit: the key is committed by then.
    const second = await rotate();
    let since = now();
    const signed = await everyInstanceWithin(
      async (baseUrl) => anonymousTokenRequest(baseUrl, app),
      (outcome) => outcome.status === 200 && signingKeyIdOf(outcome.body.access_token as string) === second,
      since,
    );
    for (const { index, elapsed, trail } of signed)
      assert.ok(
        elapsed < 1_000,
        `instance ${index} signed with the new key only ${Math.round(elapsed)} ms after the rotation; it answered ${trail.join(', ')}; its log: ${instances[index]!.stdout().slice(-3_000)}`,
      );
    latencies.push(`key rotation: new key used after ${signed.map((result) => Math.round(result.elapsed)).join(', ')} ms`);
    const ofSecond = await Promise.all(instances.map((instance) => anonymousOf(instance.baseUrl)));
    for (const token of ofSecond) assert.equal(signingKeyIdOf(token), second);

    await rotate();
    for (const instance of instances) {
      for (const token of ofSecond) assert.ok(isAnonymousWhoami(await whoami(instance.baseUrl, app.appId, token), app, 'bearer'));
    }
    const retired = await cli(['keys', 'retire', String(second)]);
    assert.equal(retired.code, 0, retired.stderr);
    since = now();
    for (const token of ofSecond) {
      const results = await everyInstanceWithin(
        (baseUrl) => whoami(baseUrl, app.appId, token),
        (outcome) => outcome.status === 401,
        since,
      );
      for (const { index, elapsed, outcome } of results) {
        assert.deepEqual(errorProblems(outcome, 401, 'INVALID_TOKEN'), [], `instance ${index}: ${show(outcome)}`);
        assert.ok(elapsed < 1_000, `instance ${index} accepted a token of the retired key ${Math.round(elapsed)} ms after`);
      }
    }
    for (const instance of instances)
      assert.ok(isAnonymousWhoami(await whoami(instance.baseUrl, app.appId, await anonymousOf(instance.baseUrl)), app, 'bearer'));
  });

  it('an anonymous token revoked by itself through one instance is refused by every instance within 1 s', async () => {
    const app = await createApp('Self-revoked');
    const token = (await anonymousTokenRequest(instances[0]!.baseUrl, app)).body.access_token as string;
    for (const instance of instances) assert.ok(isAnonymousWhoami(await whoami(instance.baseUrl, app.appId, token), app, 'bearer'));
    const since = now();
    const revoked = await post(`${instances[1]!.baseUrl}/api/apps/${app.appId}/oauth2/revoke`, `Bearer ${token}`, { token });
    assert.equal(revoked.status, 200);
    const results = await everyInstanceWithin(
      (baseUrl) => whoami(baseUrl, app.appId, token),
      (outcome) => outcome.status === 401,
      since,
    );
    for (const { index, elapsed } of results) assert.ok(elapsed < 1_000, `instance ${index}: ${Math.round(elapsed)} ms`);
    latencies.push(
      `self-revocation of an anonymous token: refused after ${results.map((result) => Math.round(result.elapsed)).join(', ')} ms`,
    );
  });

  it('a configuration changed through one instance is applied by every instance within 1 s', async () => {
    const app = await createApp('Configured everywhere');
    const admin = (await adminTokenRequest(instances[0]!.baseUrl, app)).body.access_token as string;
    for (const instance of instances)
      assert.ok(isToken(await anonymousTokenRequest(instance.baseUrl, { ...app, appKey: 'not the key' }), 'ANONYMOUS'));

    const since = now();
    const changed = await post(
      `${instances[1]!.baseUrl}/api/apps/${app.appId}/configuration`,
      `Bearer ${admin}`,
      { requireAppKey: true },
      'PATCH',
    );
    assert.equal(changed.status, 200);
    const results = await everyInstanceWithin(
      (baseUrl) => anonymousTokenRequest(baseUrl, { ...app, appKey: 'not the key' }),
      (outcome) => outcome.status === 401,
      since,
    );
    for (const { index, elapsed, outcome } of results) {
      assert.deepEqual(errorProblems(outcome, 401, 'invalid_client'), [], `instance ${index}: ${show(outcome)}`);
      assert.ok(elapsed < 1_000, `instance ${index} ignored the configuration for ${Math.round(elapsed)} ms`);
    }
    for (const instance of instances) assert.ok(isToken(await anonymousTokenRequest(instance.baseUrl, app), 'ANONYMOUS'));
  });

  it('the background load on all three instances got only the expected answers, and no instance fell back to flushing', async () => {
    await load.stop();
    assert.deepEqual(load.crashes, []);
    const total = [...tally.values()].reduce((sum, count) => sum + count, 0);
    console.log(`[instances] background load: ${total} requests: ${JSON.stringify(Object.fromEntries(tally))}`);
    assert.ok(total >= 300, `only ${total} background requests were sent`);
    assert.deepEqual(unexpected.slice(0, 20), [], `${unexpected.length} unexpected answers`);
    assert.ok(![...tally.keys()].some((key) => key.startsWith('5')), 'a 5xx answer');
    for (const [index, instance] of instances.entries()) {
      assert.equal(instance.child.exitCode, null, `instance ${index} exited; stderr: ${instance.stderr()}`);
      assert.equal(instance.child.signalCode, null, `instance ${index} was killed`);
      // The fallback flush would hide a broken notification path: it must never have been needed.
      for (const warning of FALLBACK_WARNINGS) {
        assert.ok(!instance.stdout().includes(warning), `instance ${index} lost its notification connection: ${instance.stdout()}`);
      }
      assert.ok(!instance.stdout().includes('"request failed"'), `instance ${index} logged a failed request: ${instance.stdout()}`);
    }
    if (latencies.length > 0) console.log(`[instances] notification latencies:\n${latencies.join('\n')}`);
  });
});

describe('a change committed while an instance is still reading the same app', () => {
  // The instance reads PostgreSQL through a proxy that holds query results for 800 ms but passes
  // notifications at once: its read of an app it has not cached is answered by PostgreSQL before the
  // change commits, and reaches it after the change's notification. What it read may serve the
  // request in flight (it started before the change); it must not be kept as the app from then on.
  let database: { databaseUrl: string; drop(): Promise<void> } | undefined;
  let proxy: TcpProxy | undefined;
  let instance: ServerProcess;
  let store: Store | undefined;
  /** The operator's side, in this process: the AppService the CLI runs. */
  let operator: Tessera;
  const watcher = new ChangeWatcher();

  before(async () => {
    database = await createPostgresDatabase();
    proxy = TcpProxy.toDatabase(database.databaseUrl);
    await proxy.start();
    instance = await startTessera(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: proxy.urlFor(database.databaseUrl) });
    store = await openPostgresStore(database.databaseUrl);
    operator = createTessera({ store });
    await watcher.start(database.databaseUrl);
  });

  after(async () => {
    await runAll([
      () => watcher.stop(),
      () => children.killAll(),
      async () => store?.close(),
      async () => proxy?.cut(),
      async () => database?.drop(),
    ]);
  });

  /** Sends `request` (which makes the instance read the app), then `change`s the app while that read's result is held. */
  async function changeDuringRead(
    request: () => Promise<Outcome>,
    change: () => Promise<void>,
  ): Promise<{ first: Outcome; changedAt: number }> {
    // Open a few pool connections first (unknown apps are looked up too), so that the read below
    // is sent at once rather than after a held connection handshake.
    await Promise.all(['warm0', 'warm1', 'warm2', 'warm3'].map((appId) => whoami(instance.baseUrl, appId, undefined)));
    proxy!.delayMs = 800;
    try {
      const inFlight = request();
      await sleep(200); // PostgreSQL has answered the read by now; the proxy holds the answer
      const changedAt = now();
      await change();
      return { first: await inFlight, changedAt };
    } finally {
      proxy!.delayMs = 0;
    }
  }

  it('a ClientSecret rotated during the read: the old secret is refused within 1 s and the new one works', async () => {
    const app = await operator.apps.create('Rotated mid-read');
    let newSecret = '';
    const { first, changedAt } = await changeDuringRead(
      () => adminTokenRequest(instance.baseUrl, app),
      async () => {
        newSecret = (await operator.apps.rotateSecret(app.appId, {}, OPERATOR)).clientSecret;
      },
    );
    assert.ok(first.status === 200 || first.status === 401, `the request in flight: ${show(first)}`);
    const notifiedAt = watcher.firstAt(app.appId, changedAt);
    assert.ok(notifiedAt !== undefined, 'the rotation sent no notification');
    await sleep(Math.max(0, notifiedAt + 1_000 - now()));
    const old = await adminTokenRequest(instance.baseUrl, app);
    assert.deepEqual(
      errorProblems(old, 401, 'invalid_client'),
      [],
      `old secret 1 s after the rotation (a stale app was cached): ${show(old)}`,
    );
    const fresh = await adminTokenRequest(instance.baseUrl, { ...app, clientSecret: newSecret });
    assert.ok(isToken(fresh, app.adminId), `new secret 1 s after the rotation: ${show(fresh)}`);
  });

  it('an app deleted during the read: 404 APP_NOT_FOUND within 1 s', async () => {
    const app = await operator.apps.create('Deleted mid-read');
    const { first, changedAt } = await changeDuringRead(
      () => whoami(instance.baseUrl, app.appId, undefined),
      () => operator.apps.delete(app.appId, OPERATOR),
    );
    assert.ok(first.status === 200 || first.status === 404, `the request in flight: ${show(first)}`);
    const notifiedAt = watcher.firstAt(app.appId, changedAt);
    assert.ok(notifiedAt !== undefined, 'the deletion sent no notification');
    await sleep(Math.max(0, notifiedAt + 1_000 - now()));
    const basicWhoami = await whoami(instance.baseUrl, app.appId, undefined);
    assert.deepEqual(
      errorProblems(basicWhoami, 404, 'APP_NOT_FOUND'),
      [],
      `Basic 1 s after the deletion (a stale app was cached): ${show(basicWhoami)}`,
    );
    const token = await anonymousTokenRequest(instance.baseUrl, app);
    assert.deepEqual(errorProblems(token, 404, 'APP_NOT_FOUND'), [], `anonymous token 1 s after the deletion: ${show(token)}`);
  });
});
