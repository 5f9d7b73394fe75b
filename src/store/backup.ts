import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { importBackend, parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';

export interface BackupResult {
  from: string;
  to: string;
  bytes: number;
  elapsedMs: number;
}

/**
 * `tessera store backup PATH`: a consistent copy of the SQLite store at `databaseUrl`, taken while
 * the server runs. PostgreSQL has its own tools for this (`pg_dump`), which docs/deployment.md shows.
 */
export async function backupStore(databaseUrl: string | undefined, path: string): Promise<BackupResult> {
  const location = parseDatabaseUrl(databaseUrl);
  if (location.backend === 'postgres') {
    throw new TesseraError(
      'CONFLICT',
      'store backup is for SQLite; back up PostgreSQL with pg_dump (pg_dump --format=custom --file=tessera.dump DATABASE_URL) ' +
        'and restore with pg_restore into an empty database (see docs/deployment.md, Backups)',
    );
  }
  const to = resolve(path);
  if (existsSync(to)) throw new TesseraError('CONFLICT', `store backup: ${to} exists already; give a path that does not exist`);
  if (to === location.path) throw new TesseraError('CONFLICT', 'store backup: PATH is the store itself');
  if (!existsSync(dirname(to))) throw new Error(`store backup: the folder ${dirname(to)} does not exist`);
  const started = Date.now();
  const { backupSqliteStore } = await importBackend('libsql', () => import('./sqlite/backup.js'));
  const { bytes } = backupSqliteStore(location.path, to);
  return { from: location.path, to, bytes, elapsedMs: Date.now() - started };
}
