import { existsSync } from 'node:fs';
import { currentBuild, KNOWN_MIGRATIONS, SchemaRefused } from '../../release.js';
import type { OpenCheckingStore } from '../checking.js';
import { noTesseraStore, readingRefusal } from '../schema.js';
import { checkingReads } from '../sql/checking-reads.js';
import { ChangePoller, type ChangePollOptions } from './change-poller.js';
import { openDatabaseToRead, retryWhileBusy } from './connection.js';
import { readSchemaState } from './schema-state.js';
import { sqliteRunner } from './runner.js';

/**
 * What another service's `TesseraVerifier` reads of the embedded store (`CheckingStore`): the file
 * Tessera made, never created, migrated nor written here, and the change signal polled as the
 * server polls it.
 */
export function openSqliteCheckingStore(path: string, options: ChangePollOptions = {}): OpenCheckingStore {
  if (path === ':memory:' || !existsSync(path)) throw new SchemaRefused(noTesseraStore(path));
  const db = openDatabaseToRead(path);
  try {
    const refusal = readingRefusal(
      KNOWN_MIGRATIONS,
      retryWhileBusy(() => readSchemaState(db)),
      currentBuild(),
      path,
    );
    if (refusal !== undefined) throw new SchemaRefused(refusal);
  } catch (error) {
    db.close();
    throw error;
  }
  const changes = new ChangePoller(db, options.changePollIntervalMs ?? 250);
  return {
    ...checkingReads(sqliteRunner(db, path)),
    onChange: (listener) => changes.listeners.push(listener),
    async close() {
      changes.stop();
      if (db.open) db.close();
    },
  };
}
