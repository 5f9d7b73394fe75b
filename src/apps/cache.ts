import { BoundedCache } from '../bounded-cache.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { appNotFound } from '../error-catalogue.js';
import { NO_CACHE_LOOKUPS, type CacheLookups } from '../metrics/port.js';
import { APP_ID_PATTERN, type AppRecord } from './app.js';
import type { AppStore } from './store.js';

/**
 * Apps are read on every request, and change rarely. The cache keeps them in memory and is emptied
 * by the store's change signal (see `Store.onChange`), which arrives within a second of a change
 * made by any process, so a rotated secret or a deleted app stops working within that second.
 */
export class AppCache {
  readonly #apps: BoundedCache<string, AppRecord>;

  constructor(
    private readonly store: AppStore,
    maxEntries = 10_000,
    private readonly lookups: CacheLookups = NO_CACHE_LOOKUPS,
  ) {
    this.#apps = new BoundedCache(maxEntries);
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

  /** The app from memory, or a promise of it from the store. */
  get(appId: string): MaybePromise<AppRecord | undefined> {
    const cached = this.#apps.get(appId);
    if (cached !== undefined) {
      this.lookups.hit();
      return cached;
    }
    this.lookups.miss();
    const generation = this.#generation;
    const reading = this.#reading.get(appId);
    // Only a read begun since the last invalidation may be shared: an older one may miss a change.
    if (reading !== undefined && reading.generation === generation) return reading.read;
    const read = this.store
      .findById(appId)
      .then((app) => {
        if (app !== undefined && generation === this.#generation) this.#apps.set(appId, app);
        return app;
      })
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

  /** Forgets one app, or every app when no id is given. */
  invalidate(appId?: string): void {
    this.#generation++;
    if (appId === undefined) this.#apps.clear();
    else this.#apps.delete(appId);
  }
}
