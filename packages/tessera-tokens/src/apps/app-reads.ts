import type { MaybePromise } from '../maybe-promise.js';
import type { AppRecord } from './app.js';

/** An app by its AppID: the server's `AppStore` reads it so. */
export interface AppReads {
  /** At once on SQLite; on PostgreSQL, the reads asked for in one turn of the event loop share one statement (but in a transaction). */
  findById(appId: string): MaybePromise<AppRecord | undefined>;
}
