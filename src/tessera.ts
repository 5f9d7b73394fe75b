import { AppCache } from './apps/cache.js';
import { AppService } from './apps/service.js';
import { Authenticator } from './auth/authenticate.js';
import { systemClock, type Clock } from './clock.js';
import { createRateLimits, DEFAULT_RATE_LIMITS, type RateLimits, type RateLimitSettings } from './limits/rate-limits.js';
import type { Store } from './store/store.js';
import { TokenService } from './tokens/service.js';

/** The domain services wired to one store: what the HTTP server, the CLI and the middleware use. */
export interface Tessera {
  readonly store: Store;
  readonly clock: Clock;
  readonly apps: AppService;
  readonly appCache: AppCache;
  readonly tokens: TokenService;
  readonly authenticator: Authenticator;
  readonly limits: RateLimits;
}

export interface TesseraOptions {
  store: Store;
  clock?: Clock;
  rateLimits?: RateLimitSettings;
}

export function createTessera(options: TesseraOptions): Tessera {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const limits = createRateLimits(options.rateLimits ?? DEFAULT_RATE_LIMITS);
  const appCache = new AppCache(store.apps);
  const tokens = new TokenService(store.tokens, clock, limits);
  const forget = (appId?: string) => {
    appCache.invalidate(appId);
    tokens.forgetCachedTokens();
  };
  store.onChange(forget);
  return {
    store,
    clock,
    apps: new AppService(store.apps, clock, forget),
    appCache,
    tokens,
    authenticator: new Authenticator(appCache, tokens),
    limits,
  };
}
