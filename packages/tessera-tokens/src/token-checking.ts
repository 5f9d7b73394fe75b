import { AppCache } from './apps/cache.js';
import { cacheBudget, DEFAULT_CACHE_MEMORY_MB } from './cache/budget.js';
import { Authenticator, type RefusedTokens } from './auth/authenticate.js';
import type { Clock } from './clock.js';
import { Keyring } from './signing-keys/keyring.js';
import { JwtAccessTokens } from './jwt/access-tokens.js';
import { JwtKeys } from './jwt/keys.js';
import { NO_CACHE_METRICS, type CacheMetrics } from './metrics/cache-lookups.js';
import type { CheckingStore } from './store/checking.js';
import { AnonymousTokens } from './tokens/anonymous-tokens.js';
import { TokenChecker } from './tokens/checker.js';
import { RevokedTokens } from './tokens/revoked-tokens.js';

/** What checks requests' credentials, for this service and for other services (`TesseraVerifier`). */
export interface TokenChecking {
  readonly apps: AppCache;
  readonly tokens: TokenChecker;
  /** The checker's self-verifying anonymous tokens, for issuing them, and the ones revoked one by one. */
  readonly anonymous: AnonymousTokens;
  readonly revoked: RevokedTokens;
  /** JWT access tokens, and the published keys they are checked with. */
  readonly jwts: JwtAccessTokens;
  readonly authenticator: Authenticator;
  /** Drops what the caches hold of one app, or of every app (after a change made by this process). */
  readonly forget: (appId?: string) => void;
}

export interface TokenCheckingOptions {
  clock: Clock;
  /** Told of each refused token (the server records it as `token.refused`); absent in other services, which record nothing. */
  onRefusedToken?: RefusedTokens;
  /** What the caches may take, in all (CACHE_MEMORY_MB; `DEFAULT_CACHE_MEMORY_MB` by default). */
  cacheMemoryMb?: number;
  /** Counts the caches' hits and misses (METRICS_PORT); nothing by default. */
  metrics?: CacheMetrics;
}

/**
 * The app cache, the token checker (with the signing keys and the revoked anonymous tokens) and the
 * `Authenticator` over one store, with the store's change signal wired to them: a change made by
 * any process reaches them within a second.
 */
export function createTokenChecking(store: CheckingStore, options: TokenCheckingOptions): TokenChecking {
  const metrics = options.metrics ?? NO_CACHE_METRICS;
  const budget = cacheBudget(options.cacheMemoryMb ?? DEFAULT_CACHE_MEMORY_MB);
  const { clock } = options;
  const apps = new AppCache(store.apps, {
    maxBytes: budget.apps,
    absentBytes: budget.absentApps,
    clock,
    lookups: metrics.cacheLookups('apps'),
  });
  const revoked = new RevokedTokens(store.revokedTokens, clock, metrics.cacheLookups('revoked_tokens'));
  const anonymous = new AnonymousTokens(
    new Keyring(store.signingKeys),
    revoked,
    clock,
    budget.anonymousTokens,
    metrics.cacheLookups('anonymous_tokens'),
  );
  const jwts = new JwtAccessTokens(new JwtKeys(store.jwtKeys, clock), budget.jwtTokens, metrics.cacheLookups('jwt_tokens'));
  const tokens = new TokenChecker(store.tokens, anonymous, jwts, clock, {
    maxBytes: budget.storedTokens,
    absentBytes: budget.absentTokens,
    lookups: metrics.cacheLookups('admin_tokens'),
  });
  const forget = (appId?: string) => {
    apps.invalidate(appId);
    tokens.forgetAll();
  };
  store.onChange((change) => {
    revoked.stale();
    if (change === 'revocations') return;
    if (change === 'anything') {
      anonymous.forgetAll();
      jwts.forgetAll();
      forget();
    } else {
      forget(change.appId);
    }
  });
  return { apps, tokens, anonymous, revoked, jwts, authenticator: new Authenticator(apps, tokens, options.onRefusedToken), forget };
}
