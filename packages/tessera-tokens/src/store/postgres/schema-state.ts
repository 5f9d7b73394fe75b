import type pg from 'pg';
import { appliedMigrations, RELEASES_RECORDED_FROM, type SchemaState } from '../schema.js';

/**
 * The migrations applied, and the release the database was finalized for; an empty state for a new
 * database. Only a missing `schema_migrations` (42P01) means a new database: any other error reading
 * it is thrown, so that a database that could not be read is never taken for one to migrate from
 * scratch, and a role that may not read the table is told which grant it lacks.
 */
export async function readSchemaState(pool: Pick<pg.Pool, 'query'>): Promise<SchemaState> {
  const rows = await pool
    .query<{ version: number; applied_at: string; release?: string | null; serves_from?: string | null }>('SELECT * FROM schema_migrations')
    .then((result) => result.rows)
    .catch((error: { code?: string; message?: string }) => {
      if (error.code === '42P01') return []; // undefined_table: a new database
      if (error.code === '42501') {
        // insufficient_privilege
        throw new Error(
          `Tessera cannot tell which migrations the database has: its role may not read schema_migrations (${error.message ?? error.code}). ` +
            'Grant it SELECT on schema_migrations, as docs/deployment.md says ("Database roles").',
          { cause: error },
        );
      }
      throw error;
    });
  const applied = appliedMigrations(rows);
  if (!applied.some((migration) => migration.version === RELEASES_RECORDED_FROM)) return { applied, finalizedRelease: null };
  const state = await pool.query<{ finalized_release: string }>('SELECT finalized_release FROM upgrade_state WHERE id = 1');
  return { applied, finalizedRelease: state.rows[0]?.finalized_release ?? null };
}
