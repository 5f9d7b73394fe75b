import { closeSync, existsSync, openSync, rmSync, statSync } from 'node:fs';
import { openDatabase } from 'tessera-tokens/internal/store/sqlite/connection.js';

/**
 * A consistent copy of a SQLite store, taken while servers read and write it: `VACUUM INTO` reads
 * one snapshot (a read transaction, which WAL lets writers work beside) and writes it compacted to
 * `to`. `to` is created first, exclusively and readable by its owner only, so that an existing file
 * is never overwritten and the copy's secrets are never readable by others.
 */
export function backupSqliteStore(path: string, to: string): { bytes: number } {
  if (path === ':memory:' || !existsSync(path)) throw new Error(`there is no SQLite store at ${path}`);
  closeSync(openSync(to, 'wx', 0o600));
  try {
    const db = openDatabase(path);
    try {
      db.prepare('VACUUM INTO :to').run({ to });
      return { bytes: statSync(to).size };
    } finally {
      db.close();
    }
  } catch (error) {
    rmSync(to, { force: true });
    throw error;
  }
}
