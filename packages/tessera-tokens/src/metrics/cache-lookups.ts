/**
 * `apps`: the app cache; `admin_tokens`: stored tokens checked before (admin tokens, and anonymous
 * ones from before they were self-verifying); `anonymous_tokens`: self-verifying tokens verified
 * before; `jwt_tokens`: anonymous JWT access tokens verified before; `revoked_tokens`: the list of revoked anonymous tokens, a miss when it had to be read again.
 */
export type CacheName = 'apps' | 'admin_tokens' | 'anonymous_tokens' | 'jwt_tokens' | 'revoked_tokens';

/** What token checking tells the metrics: its caches' hits and misses (`Metrics` is one). */
export interface CacheMetrics {
  /** The counter of hits and misses of one in-process cache; asked for once, by the cache's constructor. */
  cacheLookups(cache: CacheName): CacheLookups;
}

export interface CacheLookups {
  hit(): void;
  miss(): void;
}

export const NO_CACHE_LOOKUPS: CacheLookups = { hit() {}, miss() {} };

export const NO_CACHE_METRICS: CacheMetrics = Object.freeze({ cacheLookups: () => NO_CACHE_LOOKUPS });
