import { sqlAppStore } from '../sql/apps.js';
import { sqlDeveloperStore } from '../sql/developers.js';
import { sqlEventStore } from '../sql/events.js';
import { createFirstKey, sqlKeyStore } from '../sql/keys.js';
import { sqlOnceClaimStore } from '../sql/once-claims.js';
import { sqlRevokedTokenStore } from '../sql/revoked-tokens.js';
import { sqlTokens } from '../sql/tokens.js';
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

  const tokens = sqlTokens(sql);
  const changes = new ChangePoller(db, options.changePollIntervalMs ?? 250);

  return {
    backend: 'sqlite',
    apps: sqlAppStore(sql),
    tokens: tokens.store,
    revokedTokens: sqlRevokedTokenStore(sql),
    keys: sqlKeyStore(sql),
    events: sqlEventStore(sql),
    developers: sqlDeveloperStore(sql),
    onceClaims: sqlOnceClaimStore(sql),
    onChange(listener) {
      changes.listeners.push(listener);
    },
    changeSignalUp: () => true,
    onTokenBatch(listener) {
      tokens.onBatch(listener);
    },
    async ping() {
      await sql.get('SELECT 1');
    },
    async close() {
      if (!db.open) return;
      changes.stop();
      await tokens.drain();
      if (!db.open) return;
      // The driver lets go of the file only once its statements are garbage-collected: move the
      // write-ahead log into the database now, so that the file is complete whenever that happens.
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  };
}
