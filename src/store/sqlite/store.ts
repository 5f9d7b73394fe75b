import { createFirstKey } from '../sql/signing-keys.js';
import { sqlStore } from '../sql/store.js';
import type { Store } from '../store.js';
import { ChangePoller, type ChangePollOptions } from 'tessera-tokens/internal/store/sqlite/change-poller.js';
import { openDatabase, retryWhileBusy } from 'tessera-tokens/internal/store/sqlite/connection.js';
import { migrate } from './migrations.js';
import { sqliteRunner } from 'tessera-tokens/internal/store/sqlite/runner.js';
import type { UpgradeState } from '../../upgrade/store.js';
import { startCheckpointer, type CheckpointerOptions } from './checkpointer.js';

export interface SqliteStoreOptions extends ChangePollOptions {
  /**
   * Checkpoint on a thread of its own (`checkpointer.ts`), not inside the commits: for a serving
   * process, whose token checks must not wait for a checkpoint.
   */
  checkpointsOffThread?: CheckpointerOptions;
}

/**
 * The embedded store: one SQLite file (`connection.ts`), its schema (`migrations.ts`), the tables
 * written once for both dialects (`../sql/`) over the SQLite runner (`runner.ts`), and the change
 * signal (`change-poller.ts`).
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = openDatabase(path);
  try {
    retryWhileBusy(() => migrate(db));
  } catch (error) {
    db.close();
    throw error;
  }
  const runner = sqliteRunner(db, path);
  retryWhileBusy(() => void createFirstKey(runner, Date.now()));
  const changes = new ChangePoller(db, options.changePollIntervalMs ?? 250);
  const checkpointer =
    options.checkpointsOffThread === undefined || path === ':memory:'
      ? undefined
      : startCheckpointer(db, path, options.checkpointsOffThread);
  const sql = checkpointer === undefined ? runner : checkpointer.wrap(runner);

  const upgradeState = retryWhileBusy(() => readUpgradeStateNow(db));
  return sqlStore({
    backend: 'sqlite',
    sql,
    upgradeState,
    tokenBatchesInFlight: 1,
    onChange: (listener) => changes.listeners.push(listener),
    // The poller reads the file itself: nothing is trusted beyond what it read.
    changeSignal: () => ({ up: true, trustedUntil: Date.now() }),
    async close() {
      changes.stop();
      await checkpointer?.stop();
      if (!db.open) return;
      // The driver lets go of the file only once its statements are garbage-collected: move the
      // write-ahead log into the database now, so that the file is complete whenever that happens.
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  });
}

/** The upgrade state, read synchronously as the file was opened. */
function readUpgradeStateNow(db: ReturnType<typeof openDatabase>): UpgradeState | undefined {
  const row = db.prepare('SELECT finalized_release, finalized_at, older_seen_at FROM upgrade_state WHERE id = 1').get() as
    { finalized_release: string; finalized_at: number | null; older_seen_at: number } | undefined;
  return row && { finalizedRelease: row.finalized_release, finalizedAt: row.finalized_at, olderSeenAt: row.older_seen_at };
}
