import { LRUCache } from 'lru-cache';
import { AbsentKeys } from '../cache/absent-keys.js';
import type { Clock } from '../clock.js';
import { appNotFound } from '../error-catalogue.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { NO_CACHE_LOOKUPS, type CacheLookups } from '../metrics/cache-lookups.js';
import { APP_ID_PATTERN, type AppRecord } from './app.js';
import type { AppReads } from './app-reads.js';

/** What a cached app with a short name and no origins takes (measured: about 1,250 bytes). */
const APP_ENTRY_BYTES = 1_300;

/** What one cached app takes: more for a long name and many origins. */
export function appEntryBytes(app: AppRecord): number {
  // Characters count twice: a name beyond latin1 is stored two bytes a character.
  let bytes = APP_ENTRY_BYTES + 2 * app.name.length;
  for (const origin of app.configuration.allowedOrigins) bytes += 40 + 2 * origin.length;
  // A credential: its record, digests and lists (measured: about 580 bytes with two scopes and no address).
  for (const credential of app.credentials) {
    bytes += 700 + 2 * credential.name.length + 60 * (credential.scopes.length + credential.allowFrom.length);
  }
  return bytes;
}

export interface AppCacheOptions {
  /** Bytes the apps may take (`CacheBudget.apps`); the least recently used go first. */
  maxBytes: number;
  /** Bytes for the AppIDs the store did not have, remembered for a short while. */
  absentBytes: number;
  /** What those AppIDs' ages are read from. */
  clock: Clock;
  lookups?: CacheLookups;
}

/**
 * Apps are read on every request, and change rarely. The cache keeps every app that fits its
 * budget in memory, and the store's change signal (see `Store.onChange`) drops what changed: it
 * arrives within a second of a change made by any process, so a rotated secret or a deleted app
 * stops working within that second. An AppID the store did not have is remembered as absent for a
 * while, and forgotten when the signal names it.
 */
export class AppCache {
  readonly #apps: LRUCache<string, AppRecord>;
  readonly #absent: AbsentKeys;
  readonly #lookups: CacheLookups;

  constructor(
    private readonly store: AppReads,
    options: AppCacheOptions,
  ) {
    this.#apps = new LRUCache<string, AppRecord>({ maxSize: options.maxBytes, sizeCalculation: appEntryBytes });
    this.#absent = new AbsentKeys(options.absentBytes, options.clock);
    this.#lookups = options.lookups ?? NO_CACHE_LOOKUPS;
  }

  /**
   * Counts invalidations: a read that began before one must not put what it read into the cache,
   * or a change that committed during the read would be forgotten until the next change.
   */
  #generation = 0;

  /**
   * Reads in progress, by AppID: requests that miss the cache at the same time (after an
   * invalidation, under load) share one read instead of each taking a database connection.
   */
  readonly #reading = new Map<string, { generation: number; read: Promise<AppRecord | undefined> }>();

  /** The app from memory, or from the store: at once on SQLite, a promise of it on PostgreSQL. */
  get(appId: string): MaybePromise<AppRecord | undefined> {
    const cached = this.#apps.get(appId);
    if (cached !== undefined || this.#absent.has(appId)) {
      this.#lookups.hit();
      return cached;
    }
    this.#lookups.miss();
    const generation = this.#generation;
    const reading = this.#reading.get(appId);
    // Only a read begun since the last invalidation may be shared: an older one may miss a change.
    if (reading !== undefined && reading.generation === generation) return reading.read;
    const found = this.store.findById(appId);
    if (!(found instanceof Promise)) return this.#remember(appId, found, generation);
    const read = found
      .then((app) => this.#remember(appId, app, generation))
      .finally(() => {
        if (this.#reading.get(appId)?.read === read) this.#reading.delete(appId);
      });
    this.#reading.set(appId, { generation, read });
    return read;
  }

  /** The app, or `APP_NOT_FOUND` (thrown or rejected); an AppID that cannot exist is refused without a lookup. */
  require(appId: string): MaybePromise<AppRecord> {
    if (!APP_ID_PATTERN.test(appId)) throw appNotFound();
    return andThen(this.get(appId), (app) => {
      if (app === undefined) throw appNotFound();
      return app;
    });
  }

  /** Forgets one app, or every app when no id is given (and what was absent: it may have appeared). */
  invalidate(appId?: string): void {
    this.#generation++;
    if (appId === undefined) {
      this.#apps.clear();
      this.#absent.clear();
    } else {
      this.#apps.delete(appId);
      this.#absent.delete(appId);
    }
  }

  /** Keeps what a read found, unless the cache was emptied during the read (the record may predate that change). */
  #remember(appId: string, app: AppRecord | undefined, generation: number): AppRecord | undefined {
    if (generation !== this.#generation) return app;
    if (app === undefined) this.#absent.add(appId);
    // Keyed by the record's own AppID: `appId` may be a view into the request's URL (own-key.ts).
    else this.#apps.set(app.appId, app);
    return app;
  }
}
