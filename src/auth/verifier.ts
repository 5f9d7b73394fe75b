import { AppCache } from '../apps/cache.js';
import { systemClock } from '../clock.js';
import { NO_RATE_LIMITS } from '../limits/rate-limits.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { Principal } from '../principal.js';
import { openStore } from '../store/open.js';
import type { PostgresStoreOptions } from '../store/postgres/store.js';
import type { Store } from '../store/store.js';
import { TokenService } from '../tokens/service.js';
import { Authenticator, type AuthenticationRequest } from './authenticate.js';

export type { Principal, PrincipalKind } from '../principal.js';
export type { AuthenticationRequest } from './authenticate.js';

export interface TesseraVerifierOptions {
  /** The store Tessera runs on: its `DATABASE_URL` (a SQLite file or `postgres://…`). */
  databaseUrl: string;
  /** How many tokens to keep in memory (default 100,000); each takes a few hundred bytes. */
  cachedTokens?: number;
  /** How many apps to keep in memory (default 10,000). */
  cachedApps?: number;
  postgres?: PostgresStoreOptions;
}

/** What the Fastify and Express middleware need: the principal of a request, or the contract's error. */
export interface RequestAuthenticator {
  authenticate(request: AuthenticationRequest): MaybePromise<Principal>;
}

/**
 * Checks requests for another service of the backend, against Tessera's own store, exactly as
 * Tessera does. Apps and tokens are kept in bounded caches that the store's change signal empties
 * (within 250 ms with SQLite, at once with PostgreSQL), so a revoked token, a deleted app or a
 * changed configuration is honoured within a second.
 */
export class TesseraVerifier implements RequestAuthenticator {
  readonly #authenticator: Authenticator;

  private constructor(
    private readonly store: Store,
    options: TesseraVerifierOptions,
  ) {
    const apps = new AppCache(store.apps, options.cachedApps);
    const tokens = new TokenService(store.tokens, systemClock, NO_RATE_LIMITS, undefined, options.cachedTokens);
    store.onChange((appId) => {
      apps.invalidate(appId);
      tokens.forgetCachedTokens();
    });
    this.#authenticator = new Authenticator(apps, tokens);
  }

  static async open(options: TesseraVerifierOptions): Promise<TesseraVerifier> {
    return new TesseraVerifier(await openStore(options.databaseUrl, options.postgres), options);
  }

  authenticate(request: AuthenticationRequest): MaybePromise<Principal> {
    return this.#authenticator.authenticate(request);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
