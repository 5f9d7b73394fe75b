import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { currentBuild } from 'tessera-tokens/internal/release.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  call,
  Children,
  describeOutcome,
  Load,
  runCli,
  sleep,
  terminate,
  whoami,
  type CliResult,
  type CreatedApp,
  type Outcome,
} from '../helpers/fleet.js';
import { appUrlOf, bearer } from '../helpers/http.js';
import { REPO_ROOT, startServerProcess, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { buildNextRelease, buildRelease, type OtherBuild } from '../helpers/releases.js';
import { createPostgresDatabase } from '../helpers/store.js';

// A rolling upgrade on PostgreSQL, as an operator runs one: the previous release (the fixture's
// commit, built here) serves under load; `tessera migrate` of this checkout runs beside it; an
// instance of this checkout joins it on the same database, both serving at once; then the previous
// release stops and the store is finalized. Then a roll to a later build (this checkout with one
// more migration) and a rollback that the start-up guard refuses. Throughout: no 500, every token
// acknowledged works on every instance, every revocation acknowledged holds on every instance, and
// what the previous release would misread waits for finalization.

const FIXTURE = JSON.parse(readFileSync(join(REPO_ROOT, 'tests', 'upgrade', 'fixtures', 'previous-release.json'), 'utf8')) as {
  release: string;
};
const CURRENT = currentBuild().version;
const NEXT = '99.0.0';
/** An expand migration of the later build: a column added to the tables every instance reads on every request. */
const NEXT_MIGRATION =
  'ALTER TABLE apps ADD COLUMN upgrade_probe text; ALTER TABLE tokens ADD COLUMN upgrade_probe text; ALTER TABLE events ADD COLUMN upgrade_probe text;';
/** How long a change made on one instance may take to reach another (LISTEN/NOTIFY, a cache emptied). */
const PROPAGATION_MS = 1_000;
/** A self-verifying anonymous token's length; a stored one (the previous release's kind) is 43 characters. */
const SELF_VERIFYING_LENGTH = 68;

interface Acknowledged {
  token: string;
  kind: 'admin' | 'anonymous';
  appId: string;
  by: string;
  /** now() when its answer came. */
  at: number;
}

/** What a load saw: every token acknowledged, and every answer that is neither a token nor a 503 with Retry-After. */
class Tally {
  readonly tokens: Acknowledged[] = [];
  readonly unexpected: string[] = [];
  unavailable = 0;

  note(outcome: Outcome, what: string, expected: readonly number[] = [200]): boolean {
    if (expected.includes(outcome.status)) return true;
    if (outcome.status === 503 && outcome.headers?.get('retry-after') != null) {
      this.unavailable++;
      return false;
    }
    this.unexpected.push(`${what}: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`);
    return false;
  }
}

describe(`a rolling upgrade from release ${FIXTURE.release} to ${CURRENT}, then to a later build, on PostgreSQL`, () => {
  const children = new Children();
  const workDir = mkdtempSync(join(tmpdir(), 'tessera-rolling-'));
  let database: { databaseUrl: string; drop: () => Promise<void> };
  let previous: OtherBuild;
  let next: OtherBuild;
  const servers = new Map<string, ServerProcess>();
  let app: CreatedApp;
  let other: CreatedApp;
  const tally = new Tally();

  const start = async (name: string, entry: string, env: Record<string, string> = {}) => {
    const server = await startServerProcess({
      entry,
      cwd: REPO_ROOT,
      env: {
        DATABASE_URL: database.databaseUrl,
        RATE_LIMITS: 'off',
        DEMO_APP: 'off',
        UPGRADE_FINALIZE_AFTER_SECONDS: '2',
        // The same on every instance: the JWT keys are encrypted with it (a release before 0.4.0 ignores it).
        KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
        ...env,
      },
      timeoutMs: 30_000,
    });
    servers.set(name, server);
    return server;
  };
  const stop = async (name: string) => {
    const server = servers.get(name)!;
    const { code } = await terminate(server);
    servers.delete(name);
    assert.equal(code, 0, `${name} stopped: ${server.stderr()}`);
  };
  const cli = (entry: string, args: string[]): Promise<CliResult> =>
    runCli(children, { entry, cwd: REPO_ROOT, databaseUrl: database.databaseUrl }, args, 60_000);
  const url = (name: string) => servers.get(name)!.baseUrl;

  /** Issues a token on `name` and records it if acknowledged. */
  const issue = async (name: string, target: CreatedApp, kind: 'admin' | 'anonymous') => {
    const outcome = kind === 'admin' ? await adminTokenRequest(url(name), target) : await anonymousTokenRequest(url(name), target);
    if (tally.note(outcome, `${kind} token on ${name}`)) {
      tally.tokens.push({ token: outcome.body.access_token as string, kind, appId: target.appId, by: name, at: performance.now() });
    }
    return outcome;
  };
  /** A load of token requests and checks spread over `names`, for `target`. */
  const load = (names: string[], target: CreatedApp) => {
    const running = new Load();
    running.start(4, async (loop) => {
      const name = names[Math.floor(Math.random() * names.length)]!;
      await issue(name, target, loop % 2 === 0 ? 'admin' : 'anonymous');
      const checked = tally.tokens.at(-1 - Math.floor(Math.random() * Math.min(20, tally.tokens.length)));
      if (checked !== undefined && checked.appId === target.appId) {
        // A token of the last few: it may be revoked by a step under way, so only a 500 is looked for here.
        tally.note(await whoami(url(name), target.appId, checked.token), `whoami on ${name}`, [200, 401]);
      }
    });
    return running;
  };
  /** Every one of `tokens` answers `expected` to whoami on every instance serving now. */
  const assertEveryInstance = async (tokens: Acknowledged[], expected: 200 | 401) => {
    for (const name of servers.keys()) {
      for (let from = 0; from < tokens.length; from += 25) {
        await Promise.all(
          tokens.slice(from, from + 25).map(async (token) => {
            const outcome = await whoami(url(name), token.appId, token.token);
            assert.equal(
              outcome.status,
              expected,
              `${token.kind} token issued by ${token.by}, checked on ${name}: ${describeOutcome(outcome)}`,
            );
          }),
        );
      }
    }
  };
  /** Waits for a change made elsewhere to reach every instance, then checks. */
  const afterPropagation = async (check: () => Promise<void>) => {
    await sleep(PROPAGATION_MS);
    await check();
  };
  /** The tokens of `kind` acknowledged before `at`: the 300 last, those closest to the revocation, and 100 of the others. */
  const issuedBefore = (at: number, kind: 'admin' | 'anonymous', appId: string) => {
    const all = tally.tokens.filter((token) => token.at < at && token.kind === kind && token.appId === appId);
    const earlier = all.slice(0, -300);
    return [...all.slice(-300), ...earlier.filter((_, index) => index % Math.max(1, Math.floor(earlier.length / 100)) === 0)];
  };

  before(async () => {
    [database, previous, next] = await Promise.all([
      createPostgresDatabase(),
      buildRelease(FIXTURE.release, join(workDir, 'previous')),
      buildNextRelease(join(workDir, 'next'), NEXT, NEXT_MIGRATION),
    ]);
  });

  after(async () => {
    for (const server of servers.values()) await terminate(server).catch(() => {});
    await children.killAll();
    await database?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it(`serves on release ${FIXTURE.release}, as it was deployed`, async () => {
    await start('previous', previous.entry);
    const created = await Promise.all(
      ['Rolling app', 'Rolling other app'].map(async (name) => {
        const result = await cli(previous.entry, ['apps', 'create', '--name', name, '--json']);
        assert.equal(result.code, 0, result.stderr);
        return JSON.parse(result.stdout) as CreatedApp;
      }),
    );
    [app, other] = created as [CreatedApp, CreatedApp];
    for (const kind of ['admin', 'anonymous'] as const) assert.equal((await issue('previous', app, kind)).status, 200);
  });

  it(`migrates with tessera migrate of ${CURRENT} while the previous release serves under load: no 500 there`, async () => {
    const running = load(['previous'], app);
    await sleep(500);
    const migrated = await cli(TESSERA_MAIN, ['migrate', '--json']);
    await sleep(1_000);
    await running.stop();
    assert.equal(migrated.code, 0, migrated.stderr);
    const report = JSON.parse(migrated.stdout) as { applied: { version: number }[]; appliedNow: number[] };
    assert.deepEqual(
      report.applied.map((migration) => migration.version),
      [1, 2],
    );
    assert.equal(report.appliedNow.at(-1), currentBuild().schemaVersion);
    assert.match(migrated.stderr, /ended \d+ database session\(s\) of Tessera 0\.1\.0/);
    assert.deepEqual(running.crashes, []);
    assert.deepEqual(tally.unexpected, [], 'only tokens and 503s while the schema changed under the previous release');
    // What it acknowledged after the migration works on it still: its statements were prepared anew.
    await assertEveryInstance(tally.tokens.slice(-10), 200);
  });

  it(`serves on ${CURRENT} beside the previous release: every token either acknowledged works on both`, async () => {
    await start('current', TESSERA_MAIN);
    const running = load(['previous', 'current'], app);
    await sleep(2_000);
    await running.stop();
    assert.deepEqual(running.crashes, []);
    assert.deepEqual(tally.unexpected, []);
    const byCurrent = tally.tokens.filter((token) => token.by === 'current');
    assert.ok(byCurrent.length > 20 && tally.tokens.filter((token) => token.by === 'previous').length > 20, 'both issued');
    // Until finalization, anonymous tokens are stored as the previous release stores them, which it checks.
    for (const token of byCurrent.filter((token) => token.kind === 'anonymous')) assert.notEqual(token.token.length, SELF_VERIFYING_LENGTH);
    await afterPropagation(() => assertEveryInstance(tally.tokens, 200));
  });

  it('holds back what the previous release would misread: credentials, grace periods, finalization (409)', async () => {
    const admin = await adminTokenRequest(url('current'), app);
    const credential = await call(`${appUrlOf(url('current'), app.appId)}/credentials`, {
      method: 'POST',
      headers: { authorization: bearer(admin.body.access_token as string), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'reader', scopes: ['events:read'] }),
    });
    assert.equal(credential.status, 409, credential.text);
    assert.equal(credential.body.errorCode, 'CONFLICT');
    assert.match(
      credential.body.message as string,
      /Credentials with scopes wait until every instance of this service runs Tessera 0\.2\.0/,
    );

    // Attestation: the previous release would give anonymous tokens without one, accept Basic
    // anonymous access, and refuse the tokens that carry one.
    for (const change of [{ anonymousAttestation: 'monitor' }, { anonymousAttestation: 'enforce' }, { basicAnonymous: false }]) {
      const refused = await call(`${appUrlOf(url('current'), app.appId)}/configuration`, {
        method: 'PATCH',
        headers: { authorization: bearer(admin.body.access_token as string), 'content-type': 'application/json' },
        body: JSON.stringify(change),
      });
      assert.equal(refused.status, 409, `${JSON.stringify(change)}: ${refused.text}`);
      assert.match(
        refused.body.message as string,
        /Attestation of anonymous token requests.* wait until every instance of this service runs Tessera 0\.3\.0/,
      );
    }
    // JWT access tokens: the previous release would refuse them, and go on issuing opaque tokens.
    const jwt = await call(`${appUrlOf(url('current'), app.appId)}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(admin.body.access_token as string), 'content-type': 'application/json' },
      body: JSON.stringify({ accessTokenFormat: 'jwt' }),
    });
    assert.equal(jwt.status, 409, jwt.text);
    assert.match(jwt.body.message as string, /JWT access tokens wait until every instance of this service runs Tessera 0\.4\.0/);
    const off = await call(`${appUrlOf(url('current'), app.appId)}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(admin.body.access_token as string), 'content-type': 'application/json' },
      body: JSON.stringify({ anonymousAttestation: 'off', powMaxAttempts: 1000 }),
    });
    assert.equal(off.status, 200, off.text);
    // Proofs of work: the previous release claims by signature, so challenges carry no serial yet.
    const challenge = await call(`${appUrlOf(url('current'), app.appId)}/attestation/challenge`);
    assert.equal(challenge.status, 200, challenge.text);
    assert.deepEqual(Object.keys(challenge.body.parameters.data as object), ['app', 'kid']);

    const grace = await cli(TESSERA_MAIN, ['apps', 'rotate-secret', other.appId, '--grace', '600', '--json']);
    assert.equal(grace.code, 1, grace.stdout);
    assert.match(grace.stderr, /"errorCode":"CONFLICT".*A rotation with a grace period wait/);

    const finalize = await cli(TESSERA_MAIN, ['upgrade', 'finalize', '--json']);
    assert.equal(finalize.code, 1, finalize.stdout);
    assert.match(finalize.stderr, /Not finalized: release 0\.1\.0 still serves on this database/);

    const status = await cli(TESSERA_MAIN, ['upgrade', 'status', '--json']);
    assert.equal(status.code, 0, status.stderr);
    const described = JSON.parse(status.stdout) as { finalizedRelease: string; olderServing: string[]; instances: { release: string }[] };
    assert.equal(described.finalizedRelease, '0.1.0');
    assert.deepEqual(described.olderServing, ['0.1.0']);
    assert.deepEqual(
      described.instances.map((instance) => instance.release),
      [CURRENT],
    );
  });

  it('holds a revocation made on either release on both, under load', async () => {
    const running = load(['previous', 'current'], app);
    await sleep(500);
    for (const [revoker, issuer] of [
      ['previous', 'current'],
      ['current', 'previous'],
    ] as const) {
      for (const kind of ['admin', 'anonymous'] as const) {
        const token = tally.tokens.findLast(
          (candidate) => candidate.by === issuer && candidate.kind === kind && candidate.appId === app.appId,
        )!;
        const revoked = await call(`${appUrlOf(url(revoker), app.appId)}/oauth2/revoke`, {
          method: 'POST',
          headers: { authorization: bearer(token.token), 'content-type': 'application/json' },
          body: JSON.stringify({ token: token.token }),
        });
        assert.equal(revoked.status, 200, `RFC 7009 on ${revoker}: ${revoked.text}`);
        await afterPropagation(() => assertEveryInstance([token], 401));
      }
    }
    for (const [revoker, kind] of [
      ['previous', 'admin'],
      ['current', 'admin'],
      ['current', 'anonymous'],
      ['previous', 'anonymous'],
    ] as const) {
      const sentAt = performance.now();
      const admin = await adminTokenRequest(url(revoker), app);
      assert.equal(admin.status, 200, admin.text);
      const revoked = await call(`${appUrlOf(url(revoker), app.appId)}/tokens?kind=${kind}`, {
        method: 'DELETE',
        headers: { authorization: bearer(admin.body.access_token as string) },
      });
      assert.equal(revoked.status, 200, `revoke-all ${kind} on ${revoker}: ${revoked.text}`);
      await afterPropagation(() => assertEveryInstance(issuedBefore(sentAt, kind, app.appId), 401));
      await sleep(300); // new tokens again, for the next revocation
    }
    await running.stop();
    assert.deepEqual(running.crashes, []);
    assert.deepEqual(tally.unexpected, []);
  });

  it('holds a rotation made on either release on both', async () => {
    for (const [rotator, entry] of [
      ['previous', previous.entry],
      ['current', TESSERA_MAIN],
    ] as const) {
      const before = other.clientSecret;
      const rotated = await cli(entry, ['apps', 'rotate-secret', other.appId, '--json']);
      assert.equal(rotated.code, 0, `${rotator}: ${rotated.stderr}`);
      other = { ...other, clientSecret: (JSON.parse(rotated.stdout) as { clientSecret: string }).clientSecret };
      await sleep(PROPAGATION_MS);
      for (const name of servers.keys()) {
        const refused = await adminTokenRequest(url(name), { ...other, clientSecret: before });
        assert.equal(refused.status, 401, `the secret rotated by ${rotator}'s CLI, on ${name}: ${refused.text}`);
        const issued = await adminTokenRequest(url(name), other);
        assert.equal(issued.status, 200, `the new secret on ${name}: ${issued.text}`);
      }
    }
  });

  it(`finalizes once the previous release is gone: self-verifying anonymous tokens and credentials on ${CURRENT}`, async () => {
    await stop('previous');
    const finalized = await cli(TESSERA_MAIN, ['upgrade', 'finalize', '--json']);
    assert.equal(finalized.code, 0, finalized.stderr);
    assert.equal((JSON.parse(finalized.stdout) as { finalizedRelease: string }).finalizedRelease, CURRENT);
    let anonymous: Outcome | undefined;
    for (let tries = 0; tries < 40; tries++) {
      anonymous = await anonymousTokenRequest(url('current'), app);
      if ((anonymous.body?.access_token as string | undefined)?.length === SELF_VERIFYING_LENGTH) break;
      await sleep(250);
    }
    assert.equal((anonymous!.body.access_token as string).length, SELF_VERIFYING_LENGTH, 'the instance learnt of the finalization');
    const challenge = await call(`${appUrlOf(url('current'), app.appId)}/attestation/challenge`);
    assert.ok(Number.isSafeInteger(challenge.body.parameters.data.serial), challenge.text);
    const admin = await adminTokenRequest(url('current'), app);
    const credential = await call(`${appUrlOf(url('current'), app.appId)}/credentials`, {
      method: 'POST',
      headers: { authorization: bearer(admin.body.access_token as string), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'reader', scopes: ['events:read'] }),
    });
    assert.equal(credential.status, 201, credential.text);
    const enforced = await cli(TESSERA_MAIN, ['apps', 'configure', other.appId, 'anonymousAttestation=enforce', '--json']);
    assert.equal(enforced.code, 0, enforced.stderr);
    assert.equal(
      (JSON.parse(enforced.stdout) as { configuration: { anonymousAttestation: string } }).configuration.anonymousAttestation,
      'enforce',
    );
    // Back off at once: the load of the tests after this one asks for anonymous tokens of both apps.
    assert.equal((await cli(TESSERA_MAIN, ['apps', 'configure', other.appId, 'anonymousAttestation=off', '--json'])).code, 0);
    const jwt = await cli(TESSERA_MAIN, ['apps', 'configure', other.appId, 'accessTokenFormat=jwt', '--json']);
    assert.equal(jwt.code, 0, jwt.stderr);
    const jwtAdmin = await adminTokenRequest(url('current'), other);
    assert.equal((jwtAdmin.body.access_token as string).split('.').length, 3, 'a JWT');
    assert.equal((await whoami(url('current'), other.appId, jwtAdmin.body.access_token as string)).status, 200);
    assert.equal((await cli(TESSERA_MAIN, ['apps', 'configure', other.appId, 'accessTokenFormat=opaque', '--json'])).code, 0);
    // Every token still valid that either release acknowledged works on the instance left.
    const revokedKinds = new Set(['admin', 'anonymous']);
    const survivors = tally.tokens.filter((token) => token.appId !== app.appId || !revokedKinds.has(token.kind));
    await assertEveryInstance(survivors, 200);
  });

  it(`rolls on to a later build (${NEXT}, one more migration) while ${CURRENT} serves under load, and back while it is not finalized`, async () => {
    const running = load(['current'], other);
    await sleep(300);
    await start('next', next.entry);
    await sleep(1_000);
    await running.stop();
    assert.deepEqual(running.crashes, []);
    assert.deepEqual(tally.unexpected, [], `${CURRENT} answered on a schema with a column added to its tables`);

    const both = load(['current', 'next'], other);
    await sleep(1_500);
    await both.stop();
    assert.deepEqual(tally.unexpected, []);
    await afterPropagation(() => assertEveryInstance(tally.tokens.filter((token) => token.appId === other.appId).slice(-200), 200));

    const refused = await cli(next.entry, ['upgrade', 'finalize', '--json']);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, new RegExp(`Not finalized: release ${CURRENT.replaceAll('.', '\\.')} still serves`));

    // A rollback before finalization: the current release starts again on the later schema.
    await stop('current');
    await start('current', TESSERA_MAIN);
    assert.equal((await adminTokenRequest(url('current'), other)).status, 200);
  });

  it(`finalizes for ${NEXT} by itself once ${CURRENT} has gone for a while; then a rollback to ${CURRENT} is refused`, async () => {
    await stop('current');
    let status: { finalizedRelease: string } | undefined;
    for (let tries = 0; tries < 60; tries++) {
      const result = await cli(next.entry, ['upgrade', 'status', '--json']);
      status = JSON.parse(result.stdout) as { finalizedRelease: string };
      if (status.finalizedRelease === NEXT) break;
      await sleep(250);
    }
    assert.equal(status?.finalizedRelease, NEXT);

    await assert.rejects(start('rollback', TESSERA_MAIN), (error: Error) => {
      assert.match(error.message, new RegExp(`finalized for release ${NEXT.replaceAll('.', '\\.')}`));
      return true;
    });
    const migrate = await cli(TESSERA_MAIN, ['migrate', '--json']);
    assert.equal(migrate.code, 1);
    assert.match(migrate.stderr, /"errorCode":"SCHEMA_REFUSED".*Run release 99\.0\.0 or later/);
    assert.equal((await adminTokenRequest(url('next'), other)).status, 200, 'the later build serves on');
  });
});
