import type { StoreChange } from '../checking.js';
import type { SqliteDatabase } from './connection.js';

export interface ChangePollOptions {
  /** How often to look for changes made by other processes (the CLI, other instances). */
  changePollIntervalMs?: number;
}

/**
 * `PRAGMA data_version` changes when another connection commits: polling it is how this process
 * learns, within one poll interval, that the CLI or another instance changed something.
 * Listeners are told "anything may have changed".
 */
export class ChangePoller {
  readonly listeners: ((change: StoreChange) => void)[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(db: SqliteDatabase, intervalMs: number) {
    const statement = db.prepare('PRAGMA data_version');
    const dataVersion = () => (statement.get() as { data_version: number }).data_version;
    let seenVersion = dataVersion();
    this.#timer = setInterval(() => {
      const version = dataVersion();
      if (version === seenVersion) return;
      seenVersion = version;
      for (const listener of this.listeners) listener('anything');
    }, intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
