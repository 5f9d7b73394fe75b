import { createFirstKey } from '../sql/keys.js';
import { sqlStore } from '../sql/store.js';
import type { Store } from '../store.js';
import { ChangePoller } from './change-poller.js';
import { openDatabase, retryWhileBusy } from './connection.js';
import { migrate } from './migrations.js';
import { sqliteRunner } from './runner.js';

export interface SqliteStoreOptions {
  /** How often to look for changes made by other processes (the CLI, other instances). */
  changePollIntervalMs?: number;
}

/**
 * The embedded store: one SQLite file (`connection.ts`), its schema (`migrations.ts`), the tables
 * written once for both dialects (`../sql/`) over the SQLite runner (`runner.ts`), and the change
 * signal (`change-poller.ts`).
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = openDatabase(path);
  retryWhileBusy(() => migrate(db));
  const sql = sqliteRunner(db, path);
  retryWhileBusy(() => void createFirstKey(sql, Date.now()));
  const changes = new ChangePoller(db, options.changePollIntervalMs ?? 250);

  return sqlStore({
    backend: 'sqlite',
    sql,
    tokenBatchesInFlight: 1,
    onChange: (listener) => changes.listeners.push(listener),
    // The poller reads the file itself: nothing is trusted beyond what it read.
    changeSignal: () => ({ up: true, trustedUntil: Date.now() }),
    async close() {
      changes.stop();
      if (!db.open) return;
      // The driver lets go of the file only once its statements are garbage-collected: move the
      // write-ahead log into the database now, so that the file is complete whenever that happens.
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  });
}
