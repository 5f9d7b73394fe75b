import type { Store } from '../store.js';
import { sqliteAppStore } from './apps.js';
import { ChangePoller } from './change-poller.js';
import { prepareDeveloperEventWrites } from './developers.js';
import { openDatabase, retryWhileBusy } from './connection.js';
import { prepareEventWrites, sqliteEventStore } from './events.js';
import { migrate } from './migrations.js';
import { sqliteOnceClaims } from './once-claims.js';
import { sqliteRunner } from './runner.js';
import { sqlDeveloperStore } from '../sql/developers.js';
import { createFirstKey, sqlKeyStore } from '../sql/keys.js';
import { sqlOnceClaimStore } from '../sql/once-claims.js';
import { sqliteRevokedTokenStore } from './revoked-tokens.js';
import { prepareTokenWrites, sqliteTokens } from './tokens.js';

export interface SqliteStoreOptions {
  /** How often to look for changes made by other processes (the CLI, other instances). */
  changePollIntervalMs?: number;
}

/**
 * The embedded store: one SQLite file (`connection.ts`), its schema (`migrations.ts`), one file per
 * table (`apps.ts`, `tokens.ts`, `revoked-tokens.ts`, `keys.ts`, `events.ts`, the developers' in
 * `developers.ts`) and the change signal (`change-poller.ts`).
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = openDatabase(path);
  retryWhileBusy(() => migrate(db));
  const sql = sqliteRunner(db);

  const tokenWrites = prepareTokenWrites(db);
  const eventWrites = prepareEventWrites(db);
  const developerEventWrites = prepareDeveloperEventWrites(db);
  const tokens = sqliteTokens(db, tokenWrites, eventWrites);
  const onceClaims = sqliteOnceClaims(db);
  retryWhileBusy(() => void createFirstKey(sql, Date.now()));
  const changes = new ChangePoller(db, options.changePollIntervalMs ?? 250);

  return {
    backend: 'sqlite',
    apps: sqliteAppStore(db, tokenWrites, eventWrites, developerEventWrites, onceClaims.claim),
    tokens: tokens.store,
    revokedTokens: sqliteRevokedTokenStore(db),
    keys: sqlKeyStore(sql),
    events: sqliteEventStore(db, eventWrites),
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
      db.prepare('SELECT 1').get();
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
