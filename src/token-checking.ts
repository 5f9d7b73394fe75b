import { AppCache } from './apps/cache.js';
import { Authenticator } from './auth/authenticate.js';
import type { Clock } from './clock.js';
import type { EventLog } from './events/log.js';
import type { Store } from './store/store.js';
import { TokenChecker } from './tokens/checker.js';

/** What checks requests' credentials, for this service and for other services (`TesseraVerifier`). */
export interface TokenChecking {
  readonly apps: AppCache;
  readonly tokens: TokenChecker;
  readonly authenticator: Authenticator;
  /** Drops what the caches hold of one app, or of every app (after a change made by this process). */
  forget(appId?: string): void;
}

export interface TokenCheckingOptions {
  clock: Clock;
  /** Where refused tokens are recorded; absent in other services, which record nothing. */
  events?: EventLog;
  cachedApps?: number;
  cachedTokens?: number;
}

/**
 * The app cache, the token checker and the `Authenticator` over one store, with the store's change
 * signal wired to the caches: a change made by any process empties them within a second.
 */
export function createTokenChecking(store: Store, options: TokenCheckingOptions): TokenChecking {
  const apps = new AppCache(store.apps, options.cachedApps);
  const tokens = new TokenChecker(store.tokens, options.clock, options.cachedTokens);
  const forget = (appId?: string) => {
    apps.invalidate(appId);
    tokens.forgetAll();
  };
  store.onChange(forget);
  return { apps, tokens, authenticator: new Authenticator(apps, tokens, options.events), forget };
}
