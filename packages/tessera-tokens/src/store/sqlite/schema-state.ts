import { appliedMigrations, RELEASES_RECORDED_FROM, type SchemaState } from '../schema.js';
import type { SqliteDatabase } from './connection.js';

/** The migrations applied, and the release the file was finalized for; an empty state for a new file. */
export function readSchemaState(db: SqliteDatabase): SchemaState {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
  if (!hasTable) return { applied: [], finalizedRelease: null };
  const applied = appliedMigrations(
    db.prepare('SELECT * FROM schema_migrations').all() as {
      version: number;
      applied_at: number;
      release?: string | null;
      serves_from?: string | null;
    }[],
  );
  if (!applied.some((migration) => migration.version === RELEASES_RECORDED_FROM)) return { applied, finalizedRelease: null };
  return { applied, finalizedRelease: finalizedRelease(db) };
}

export function finalizedRelease(db: SqliteDatabase): string | null {
  const row = db.prepare('SELECT finalized_release FROM upgrade_state WHERE id = 1').get() as { finalized_release: string } | undefined;
  return row?.finalized_release ?? null;
}
