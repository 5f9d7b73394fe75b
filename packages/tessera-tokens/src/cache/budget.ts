/**
 * CACHE_MEMORY_MB: the memory the caches of apps and tokens may take, in all. Sized by memory, not
 * by a count that a deployment outgrows: what fits stays, and the least recently used goes first
 * (lru-cache). Each cache gets a fixed share, and estimates what each of its entries takes from
 * what it holds, with overheads measured on V8 (Node.js 24) over 10⁵ entries, heap and off-heap,
 * and rounded up (docs/deployment.md, "Sizing").
 */
export const DEFAULT_CACHE_MEMORY_MB = 512;

/** Bytes per cache. */
export interface CacheBudget {
  /** Apps by AppID (`AppCache`): read on every request. */
  apps: number;
  /** Stored tokens verified before (`TokenChecker`): admin tokens, and anonymous ones from before they were self-verifying. */
  storedTokens: number;
  /** Self-verifying anonymous tokens whose MAC was verified (`AnonymousTokens`): a MAC is cheap, a read is not. */
  anonymousTokens: number;
  /** Anonymous JWT access tokens whose signature was verified (`JwtAccessTokens`): a signature costs tens of µs. */
  jwtTokens: number;
  /** AppIDs the store did not have (`AbsentKeys`), and as much again for token selectors. */
  absentApps: number;
  absentTokens: number;
}

const SHARES: Readonly<CacheBudget> = {
  apps: 0.3,
  storedTokens: 0.45,
  anonymousTokens: 0.15,
  jwtTokens: 0.05,
  absentApps: 0.025,
  absentTokens: 0.025,
};

export function cacheBudget(megabytes: number): CacheBudget {
  const bytes = megabytes * 1024 * 1024;
  const share = (cache: keyof CacheBudget) => Math.max(1, Math.floor(bytes * SHARES[cache]));
  return {
    apps: share('apps'),
    storedTokens: share('storedTokens'),
    anonymousTokens: share('anonymousTokens'),
    jwtTokens: share('jwtTokens'),
    absentApps: share('absentApps'),
    absentTokens: share('absentTokens'),
  };
}
