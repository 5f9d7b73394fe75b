import type { Config } from '../config.js';
import { currentBuild, describeBuild } from 'tessera-tokens/internal/release.js';
import { importBackend, parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';
import { SchemaRefused, type MigrationReport } from 'tessera-tokens/internal/store/schema.js';
import { CommandFailed, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const MIGRATE_FLAGS: FlagSpec = { 'dry-run': false };

const USAGE = 'usage: tessera migrate [--dry-run] [--json]';

/** What `tessera migrate` found and did. */
interface MigrateResult {
  release: string;
  commit: string;
  schemaVersion: number;
  backend: 'sqlite' | 'postgres';
  dryRun: boolean;
  /** Applied before this command ran, oldest first. */
  applied: { version: number; appliedAt: string; release: string | null }[];
  /** Not applied when it started. */
  pending: number[];
  /** Applied by this command (none with --dry-run). */
  appliedNow: number[];
}

/**
 * `tessera migrate [--dry-run]`: applies the migrations the store lacks, as its own step, run as the
 * role that owns the schema (on PostgreSQL through DATABASE_DIRECT_URL when it is set), so that
 * `tessera serve` may run as a role that only reads and writes rows. Refuses, as `serve` does, a
 * schema this release may not serve on. With --dry-run, says what it would apply.
 */
export async function runMigrateCommand(command: ParsedCommand, config: Config, out: Output): Promise<void> {
  if (command.positionals.length > 0) throw new UsageError(USAGE);
  const dryRun = command.flags['dry-run'] === true;
  const build = currentBuild();
  const location = parseDatabaseUrl(config.databaseUrl);
  let report: MigrationReport;
  try {
    if (location.backend === 'sqlite') {
      const [{ openDatabase }, { migrate }] = await importBackend('libsql', () =>
        Promise.all([import('tessera-tokens/internal/store/sqlite/connection.js'), import('../store/sqlite/migrations.js')]),
      );
      const db = openDatabase(location.path);
      try {
        report = migrate(db, { dryRun });
      } finally {
        db.close();
      }
    } else {
      const [{ openMigrationPool }, { migrate }] = await importBackend('pg', () =>
        Promise.all([import('tessera-tokens/internal/store/postgres/connection.js'), import('../store/postgres/migrations.js')]),
      );
      const pool = openMigrationPool(config.postgres.directUrl ?? location.url, config.postgres.connectTimeoutMs);
      try {
        report = await migrate(pool, {
          dryRun,
          onWaiting: (message) => process.stderr.write(`tessera: ${message}\n`),
          onNotice: (message) => process.stderr.write(`tessera: ${message}\n`),
        });
      } finally {
        await pool.end().catch(() => {});
      }
    }
  } catch (error) {
    if (error instanceof SchemaRefused) throw new CommandFailed('SCHEMA_REFUSED', error.message);
    throw error;
  }
  const result: MigrateResult = {
    release: build.version,
    commit: build.commit,
    schemaVersion: build.schemaVersion,
    backend: location.backend,
    dryRun,
    applied: report.before.applied.map((migration) => ({
      version: migration.version,
      appliedAt: new Date(migration.appliedAt).toISOString(),
      release: migration.release,
    })),
    pending: [...report.pending],
    appliedNow: [...report.applied],
  };
  out.result(result, () => describe(result));
}

function describe(result: MigrateResult): string[] {
  const lines = [
    `Tessera ${describeBuild({ version: result.release, commit: result.commit, schemaVersion: result.schemaVersion })} on ${result.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
  ];
  const last = result.applied.at(-1);
  lines.push(
    last === undefined
      ? 'Applied before: none (a new store)'
      : `Applied before: ${result.applied.length} migration${result.applied.length === 1 ? '' : 's'}, up to ${last.version} (${last.appliedAt}${last.release === null ? '' : `, by ${last.release}`})`,
  );
  if (result.pending.length === 0) {
    lines.push('Pending: none: the schema is up to date.');
  } else if (result.dryRun) {
    lines.push(`Pending: ${result.pending.join(', ')}. Nothing was applied (--dry-run).`);
  } else {
    lines.push(`Applied now: ${result.appliedNow.join(', ')}.`);
  }
  return lines;
}
