import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import {
  compareReleases,
  currentBuild,
  describeBuild,
  KNOWN_MIGRATIONS,
  OLDEST_RELEASE_SERVED,
  SCHEMA_VERSION,
  type BuildInfo,
} from 'tessera-tokens/internal/release.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { schemaVerdict, type AppliedMigration } from 'tessera-tokens/internal/store/schema.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { CAPABILITIES, Capabilities } from '../../src/upgrade/capabilities.js';
import { heartbeatDecision, heartbeatIntervalMs, olderReleasesServing, refuseFinalizeWhileOlderServe } from '../../src/upgrade/registry.js';
import type { Heartbeat, InstanceRecord, UpgradeState } from '../../src/upgrade/store.js';

const build: BuildInfo = { version: '0.2.0', commit: 'abc', schemaVersion: 12 };
const T0 = Date.UTC(2026, 10, 28);

function applied(...versions: number[]): AppliedMigration[] {
  return versions.map((version) => ({ version, appliedAt: T0, release: null, servesFrom: null }));
}

function instance(release: string, seenAt = T0): InstanceRecord {
  return { id: `${release}-${seenAt}`, release, commit: 'c', host: 'h', pid: 1, startedAt: T0, seenAt };
}

function seen(state: Partial<UpgradeState>, instances: InstanceRecord[] = [], unregisteredSessions = 0): Heartbeat {
  return { state: { finalizedRelease: '0.1.0', finalizedAt: null, olderSeenAt: T0, ...state }, instances, unregisteredSessions };
}

describe('releases', () => {
  it('says the schema version of its last migration, the same on both dialects, numbered from 1 with none skipped', () => {
    assert.equal(POSTGRES_MIGRATIONS.at(-1)!.version, SCHEMA_VERSION);
    assert.deepEqual(
      POSTGRES_MIGRATIONS.map((migration) => migration.version),
      KNOWN_MIGRATIONS,
    );
    assert.deepEqual(
      SQLITE_MIGRATIONS.map((migration) => migration.version),
      POSTGRES_MIGRATIONS.map((migration) => migration.version),
    );
  });

  it('is the version both package.json files give, with the CHANGELOG saying what it is and what it needs', () => {
    const { version, dependencies } = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
    };
    const library = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'packages', 'tessera-tokens', 'package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(library.version, version, 'the library and the server carry one version');
    assert.equal(dependencies['tessera-tokens'], version, 'the server depends on the library of its own version');
    assert.equal(currentBuild().version, version);
    const changelog = readFileSync(join(PACKAGE_ROOT, 'CHANGELOG.md'), 'utf8');
    const section = new RegExp(`^## \\[${version.replaceAll('.', '\\.')}\\]`, 'm');
    assert.match(changelog, section, `CHANGELOG.md has a section for ${version}`);
    const body = changelog.slice(changelog.search(section)).split(/^## /m)[1]!;
    assert.match(body, new RegExp(`Schema version: ${SCHEMA_VERSION}\\b`));
    assert.match(
      body,
      new RegExp(`serves from ${OLDEST_RELEASE_SERVED.replaceAll('.', '\\.')}\\b`),
      'and which release may serve beside it',
    );
    assert.match(describeBuild(build), /^0\.2\.0 \(commit abc, schema 12\)$/);
  });

  it('compares releases as MAJOR.MINOR.PATCH, numerically', () => {
    assert.ok(compareReleases('0.10.0', '0.9.9') > 0);
    assert.ok(compareReleases('1.0.0', '0.99.0') > 0);
    assert.equal(compareReleases('0.2.0', '0.2.0-test'), 0);
    assert.ok(compareReleases('0.1.0', '0.2.0') < 0);
    assert.throws(() => compareReleases('main', '0.1.0'), /not a release/);
  });
});

describe('the start-up guard (schemaVerdict)', () => {
  const known = [1, 2, 3, 12];

  it('lists what a new or older schema lacks', () => {
    assert.deepEqual(schemaVerdict(known, { applied: [], finalizedRelease: null }, build), { pending: [1, 2, 3, 12] });
    assert.deepEqual(schemaVerdict(known, { applied: applied(1, 2), finalizedRelease: null }, build), { pending: [3, 12] });
    assert.deepEqual(schemaVerdict(known, { applied: applied(1, 2, 3, 12), finalizedRelease: '0.2.0' }, build), { pending: [] });
  });

  it('serves on a schema a later release expanded, if that release says this one may', () => {
    const later: AppliedMigration = { version: 13, appliedAt: T0, release: '0.3.0', servesFrom: '0.2.0' };
    assert.deepEqual(schemaVerdict(known, { applied: [...applied(1, 2, 3, 12), later], finalizedRelease: '0.2.0' }, build), {
      pending: [],
    });
  });

  it('refuses a schema a later release contracted, naming the release it needs', () => {
    const contracted: AppliedMigration = { version: 13, appliedAt: T0, release: '0.3.0', servesFrom: '0.3.0' };
    const verdict = schemaVerdict(known, { applied: [...applied(1, 2, 3, 12), contracted], finalizedRelease: '0.2.0' }, build);
    assert.ok('refused' in verdict);
    assert.match(
      verdict.refused,
      /Tessera 0\.2\.0 \(schema 12\) does not serve on this database: .*migration 13, applied by release 0\.3\.0, which needs release 0\.3\.0 or later/,
    );
    const unknown = schemaVerdict(known, { applied: applied(1, 2, 3, 12, 14), finalizedRelease: '0.2.0' }, build);
    assert.ok('refused' in unknown, 'a migration that says nothing of itself is not served on');
  });

  it('refuses a store finalized for a later release: a rollback past finalization', () => {
    const verdict = schemaVerdict(known, { applied: applied(1, 2, 3, 12), finalizedRelease: '0.3.0' }, build);
    assert.ok('refused' in verdict);
    assert.match(verdict.refused, /finalized for release 0\.3\.0.*Run release 0\.3\.0 or later/);
  });
});

describe('the upgrade heartbeat (heartbeatDecision)', () => {
  const afterMs = 600_000;

  it('records an older release seen: registered, or release 0.1.0 by its sessions', () => {
    assert.deepEqual(heartbeatDecision(seen({}, [instance('0.2.0')], 2), build, T0, afterMs), { olderSeen: true });
    assert.deepEqual(heartbeatDecision(seen({ finalizedRelease: '0.2.0' }, [instance('0.1.5')]), build, T0, afterMs), { olderSeen: true });
    assert.deepEqual(olderReleasesServing(seen({}, [instance('0.1.5'), instance('0.2.0'), instance('0.3.0')], 1), build), [
      '0.1.0',
      '0.1.5',
    ]);
  });

  it('finalizes for its own release once no older one has been seen for the while, not before', () => {
    const state = { olderSeenAt: T0 };
    assert.equal(heartbeatDecision(seen(state, [instance('0.2.0')]), build, T0 + afterMs - 1, afterMs), 'nothing');
    assert.deepEqual(heartbeatDecision(seen(state, [instance('0.2.0')]), build, T0 + afterMs, afterMs), { finalize: '0.2.0' });
    assert.equal(heartbeatDecision(seen({ finalizedRelease: '0.2.0' }), build, T0 + 2 * afterMs, afterMs), 'nothing', 'finalized already');
  });

  it('refuses a store finalized for a later release, so that an instance of an older one stops', () => {
    assert.throws(() => heartbeatDecision(seen({ finalizedRelease: '0.3.0' }), build, T0, afterMs), {
      name: 'SchemaRefused',
      message: /finalized for release 0\.3\.0/,
    });
  });

  it('beats often enough to finalize soon after the while, at most every 10 s', () => {
    assert.equal(heartbeatIntervalMs(600_000), 10_000);
    assert.equal(heartbeatIntervalMs(2_000), 500);
    assert.equal(heartbeatIntervalMs(100), 200);
  });

  it('lets the operator finalize only when no older release serves, saying which does', () => {
    refuseFinalizeWhileOlderServe(seen({}, [instance('0.2.0')]), build);
    assert.throws(() => refuseFinalizeWhileOlderServe(seen({}, [instance('0.2.0')], 3), build), {
      code: 'CONFLICT',
      message: /Not finalized: release 0\.1\.0 still serves on this database \(3 database session\(s\) named "tessera"\)/,
    });
  });
});

describe('Capabilities', () => {
  it('allows what the finalized release brought, and refuses the rest with 409 saying what it waits for', async () => {
    let stored: UpgradeState = { finalizedRelease: '0.1.0', finalizedAt: null, olderSeenAt: T0 };
    const capabilities = new Capabilities(stored, build, async () => stored, 600_000);
    assert.equal(capabilities.allows('scopedCredentials'), false);
    await assert.rejects(capabilities.require('scopedCredentials'), (error: Error & { code?: string; status?: number }) => {
      assert.equal(error.status, 409);
      assert.match(error.message, /^Credentials with scopes wait until every instance of this service runs Tessera 0\.2\.0 or later/);
      assert.match(error.message, /no older release has been seen for 10 minutes, or once the operator runs `tessera upgrade finalize`/);
      return true;
    });
    stored = { ...stored, finalizedRelease: '0.2.0' };
    await capabilities.require('scopedCredentials');
    assert.equal(capabilities.allows('selfVerifyingAnonymousTokens'), true, 'read anew before a refusal, and kept');
    assert.equal(
      new Capabilities(undefined, build, async () => stored, 1).allows('scopedCredentials'),
      false,
      'nothing before a state is read',
    );
    assert.equal(capabilities.allows('anonymousAttestation'), false, 'a capability of 0.3.0 waits while the store is finalized for 0.2.0');
    await assert.rejects(capabilities.require('anonymousAttestation'), /runs Tessera 0\.3\.0 or later/);
    for (const capability of Object.values(CAPABILITIES)) assert.ok(compareReleases(capability.since, currentBuild().version) <= 0);
  });
});
