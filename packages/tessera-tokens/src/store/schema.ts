import { compareReleases, finalizedForLaterRelease, OLDEST_RELEASE_SERVED, type BuildInfo } from '../release.js';
export { SchemaRefused } from '../release.js';

/** The first migration that records its release (`schema_migrations.release`, `serves_from`) and the upgrade state. */
export const RELEASES_RECORDED_FROM = 12;

/** One step of a dialect's schema; each is applied once, in order, in one transaction. Never edit a shipped one. */
export interface Migration {
  version: number;
  sql: string;
}

/** What a dialect's `migrate` found and did: the schema as it was, and the migrations applied now (or, with `dryRun`, pending). */
export interface MigrationReport {
  before: SchemaState;
  pending: readonly number[];
  applied: readonly number[];
}

/** A row of `schema_migrations`: release and serves_from are null for the migrations before `RELEASES_RECORDED_FROM`. */
export interface AppliedMigration {
  version: number;
  appliedAt: number;
  release: string | null;
  servesFrom: string | null;
}

/** What a database holds of its schema: the migrations applied, and the release it was finalized for (null before 12). */
export interface SchemaState {
  applied: readonly AppliedMigration[];
  finalizedRelease: string | null;
}

/** What this build does with a schema: apply the migrations it lacks (none: serve), or refuse to serve on it, and why. */
export type SchemaVerdict = { pending: readonly number[] } | { refused: string };

/**
 * Whether `build` may serve on `state`, whose migrations it knows up to `known`: a schema a later
 * release migrated is served if every migration this build does not know says this release may
 * (`serves_from`, expand-only migrations); a database finalized for a later release is not, since
 * that release's capabilities may have written what this one would misread.
 */
export function schemaVerdict(known: readonly number[], state: SchemaState, build: BuildInfo): SchemaVerdict {
  const knownVersions = new Set(known);
  for (const migration of state.applied) {
    if (knownVersions.has(migration.version)) continue;
    const servesFrom = migration.servesFrom;
    if (servesFrom === null || compareReleases(servesFrom, build.version) > 0) {
      const needed = servesFrom ?? migration.release;
      const by = migration.release === null ? 'a release that did not record itself' : `release ${migration.release}`;
      return {
        refused:
          `Tessera ${build.version} (schema ${build.schemaVersion}) does not serve on this database: its schema has migration ` +
          `${migration.version}, applied by ${by}` +
          (needed === null
            ? '. Run the release that applied it'
            : `, which needs release ${needed} or later. Run release ${needed} or later`) +
          ' (docs/deployment.md, "Upgrading").',
      };
    }
  }
  if (state.finalizedRelease !== null && compareReleases(state.finalizedRelease, build.version) > 0) {
    return { refused: finalizedForLaterRelease(state.finalizedRelease, build.version).message };
  }
  const applied = new Set(state.applied.map((migration) => migration.version));
  return { pending: known.filter((version) => !applied.has(version)) };
}

/** What a migration applied now records of itself, from `RELEASES_RECORDED_FROM` on. */
export function migrationRecord(build: BuildInfo): { release: string; servesFrom: string } {
  return { release: build.version, servesFrom: OLDEST_RELEASE_SERVED };
}

/** `SELECT * FROM schema_migrations`'s rows as `AppliedMigration`s, whichever columns the schema has yet. */
export function appliedMigrations(
  rows: readonly { version: number; applied_at: number | string; release?: string | null; serves_from?: string | null }[],
): AppliedMigration[] {
  return rows
    .map((row) => ({
      version: Number(row.version),
      appliedAt: Number(row.applied_at),
      release: row.release ?? null,
      servesFrom: row.serves_from ?? null,
    }))
    .sort((a, b) => a.version - b.version);
}

/**
 * Why a process that only reads the store (another service's `TesseraVerifier`) cannot read
 * `state`, or undefined if it can: the schema must be the one Tessera of this build migrates to,
 * made by Tessera itself. It never migrates: Tessera does, as it starts (or `tessera migrate`).
 */
export function readingRefusal(known: readonly number[], state: SchemaState, build: BuildInfo, where: string): string | undefined {
  if (state.applied.length === 0) return noTesseraStore(where);
  const verdict = schemaVerdict(known, state, build);
  if ('refused' in verdict) return verdict.refused;
  if (verdict.pending.length === 0) return undefined;
  return (
    `The store at ${where} lacks migration${verdict.pending.length === 1 ? '' : 's'} ${verdict.pending.join(', ')}, which this verifier (Tessera ${build.version}) reads with: ` +
    `start Tessera ${build.version} on it first, which migrates it, then this service (docs/middleware.md, "Upgrading").`
  );
}

/** What a process that only reads is told where Tessera has not made its store (yet). */
export function noTesseraStore(where: string): string {
  return `There is no Tessera store at ${where}: Tessera makes it when it first starts on it (or with \`tessera migrate\`). Check DATABASE_URL, and start Tessera first.`;
}
