import { systemClock } from './clock.js';
import type { MaybePromise } from './maybe-promise.js';
import type { Principal } from './principal.js';
import type { OpenCheckingStore } from './store/checking.js';
import { openCheckingStore } from './store/open-checking.js';
import type { PostgresStoreOptions } from './store/postgres/connection.js';
import { createTokenChecking } from './token-checking.js';
import type { Authenticator, AuthenticationRequest, RequestAuthenticator } from './auth/authenticate.js';

export type { Principal, PrincipalKind } from './principal.js';
export type { AuthenticationRequest, RequestAuthenticator } from './auth/authenticate.js';

export interface TesseraVerifierOptions {
  /** The store Tessera runs on: its `DATABASE_URL` (a SQLite file or `postgres://…`). */
  databaseUrl: string;
  /** What the caches of apps and tokens may take in all, in MiB (default 256; Tessera's CACHE_MEMORY_MB). */
  cacheMemoryMb?: number;
  postgres?: PostgresStoreOptions;
}

/**
 * Checks requests for another service of the backend, against Tessera's own store, exactly as
 * Tessera does. Apps and tokens are kept in caches sized by memory that the store's change signal empties
 * (within 250 ms with SQLite, at once with PostgreSQL), so a revoked token, a deleted app or a
 * changed configuration is honoured within a second.
 */
export class TesseraVerifier implements RequestAuthenticator {
  readonly #authenticator: Authenticator;

  private constructor(
    private readonly store: OpenCheckingStore,
    options: TesseraVerifierOptions,
  ) {
    this.#authenticator = createTokenChecking(store, { clock: systemClock, cacheMemoryMb: options.cacheMemoryMb }).authenticator;
  }

  static async open(options: TesseraVerifierOptions): Promise<TesseraVerifier> {
    return new TesseraVerifier(await openCheckingStore(options.databaseUrl, options.postgres), options);
  }

  authenticate(request: AuthenticationRequest): MaybePromise<Principal> {
    return this.#authenticator.authenticate(request);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
