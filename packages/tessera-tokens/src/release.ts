import { readFileSync } from 'node:fs';

/**
 * The schema this release writes: the version of its last migration, the same on both dialects
 * (tests/unit/release.test.ts holds them to it).
 */
export const SCHEMA_VERSION = 18;

/** The migrations this release knows, on either dialect: 1 to `SCHEMA_VERSION`, none skipped (tests/unit/release.test.ts). */
export const KNOWN_MIGRATIONS: readonly number[] = Array.from({ length: SCHEMA_VERSION }, (_, index) => index + 1);

/**
 * The oldest release that may serve on the schema this release migrates to. Each release's
 * migrations only add (expand), so that the release before it keeps serving during a rolling
 * upgrade; a migration that removes or changes the meaning of data (contract) waits for a later
 * release, and raises this to the release that made it unnecessary. Recorded with each migration
 * applied (`schema_migrations.serves_from`), and read by later releases' start-up guard.
 */
export const OLDEST_RELEASE_SERVED = '0.1.0';

/** This build: its release (package.json), the commit it was built from, and its schema. */
export interface BuildInfo {
  version: string;
  commit: string;
  schemaVersion: number;
}

let buildInfo: BuildInfo | undefined;

export function currentBuild(): BuildInfo {
  buildInfo ??= { version: packageVersion(), commit: builtFrom(), schemaVersion: SCHEMA_VERSION };
  return buildInfo;
}

/** What `tessera --version` and the start-up line say: `0.2.0 (commit 1a2b3c4d5e6f, schema 14)`. */
export function describeBuild({ version, commit, schemaVersion }: BuildInfo = currentBuild()): string {
  return `${version} (commit ${commit}, schema ${schemaVersion})`;
}

/** The commit `npm run build` recorded (scripts/build-info.mjs), or `unknown` for a build without it. */
function builtFrom(): string {
  try {
    const { commit } = JSON.parse(readFileSync(new URL('./build-info.json', import.meta.url), 'utf8')) as { commit?: unknown };
    return typeof commit === 'string' && commit !== '' ? commit : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Releases compared as MAJOR.MINOR.PATCH (a pre-release or build suffix is ignored): negative, zero or positive. */
export function compareReleases(a: string, b: string): number {
  const [left, right] = [releaseParts(a), releaseParts(b)];
  for (let i = 0; i < 3; i++) {
    const difference = left[i]! - right[i]!;
    if (difference !== 0) return difference;
  }
  return 0;
}

function releaseParts(release: string): [number, number, number] {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(release);
  if (match === null) throw new Error(`not a release: ${JSON.stringify(release)}`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** The error of a build that may not serve on a schema or store: said as it is, at start-up and by `tessera migrate`. */
export class SchemaRefused extends Error {
  override readonly name = 'SchemaRefused';
}

/** Why `version` may not serve on a store finalized for the later `finalizedRelease`: by the start-up guard, and by a heartbeat. */
export function finalizedForLaterRelease(finalizedRelease: string, version: string): SchemaRefused {
  return new SchemaRefused(
    `Tessera ${version} does not serve on this database: it was finalized for release ${finalizedRelease}, ` +
      `whose capabilities may have written what ${version} would misread or not enforce. Run release ` +
      `${finalizedRelease} or later (docs/deployment.md, "Upgrading": a rollback past a finalized upgrade is a restore).`,
  );
}

/**
 * The release: this package's version (its package.json, beside dist/), which the server's package
 * shares (tests/unit/release.test.ts holds them to it).
 */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
