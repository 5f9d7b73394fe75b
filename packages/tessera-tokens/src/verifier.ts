import { systemClock } from './clock.js';
import { appNotFound, invalidToken } from './error-catalogue.js';
import { TesseraError } from './errors.js';
import { RemoteJwtVerifier, type TesseraJwtVerifierOptions } from './jwt/remote-verifier.js';
import type { MaybePromise } from './maybe-promise.js';
import type { Principal } from './principal.js';
import type { OpenCheckingStore } from './store/checking.js';
import { openCheckingStore } from './store/open-checking.js';
import type { PostgresStoreOptions } from './store/postgres/connection.js';
import { createTokenChecking } from './token-checking.js';
import { parseAuthorization } from './tokens/authorization-header.js';
import { applyRules, type Authenticator, type AuthenticationRequest, type RequestAuthenticator } from './auth/authenticate.js';

export type { Principal, PrincipalKind } from './principal.js';
export type { AuthenticationRequest, RequestAuthenticator } from './auth/authenticate.js';
export type { TesseraJwtVerifierOptions } from './jwt/remote-verifier.js';
export { TesseraError } from './errors.js';

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

/**
 * Checks requests for another service of the backend with no access to Tessera's store: the JWT
 * access tokens of one app (its `accessTokenFormat` is `jwt`), against the keys and Token Status
 * Lists Tessera publishes (docs/middleware.md, "Checking JWT access tokens offline"). The same
 * principal, rules and errors as `TesseraVerifier` for a bearer token; what only the store knows is
 * refused: an opaque token is `401 INVALID_TOKEN`, and so is Basic anonymous access.
 */
export class TesseraJwtVerifier implements RequestAuthenticator {
  private constructor(private readonly tokens: RemoteJwtVerifier) {}

  /** A verifier of the app whose issuer is `options.issuer`; reads its metadata for the JWKS's URL unless `jwksUri` is given. */
  static async create(options: TesseraJwtVerifierOptions): Promise<TesseraJwtVerifier> {
    return new TesseraJwtVerifier(await RemoteJwtVerifier.create(options));
  }

  get appId(): string {
    return this.tokens.appId;
  }

  get issuer(): string {
    return this.tokens.issuer;
  }

  get jwksUri(): string {
    return this.tokens.jwksUri;
  }

  /**
   * The principal of a JWT access token of the app; throws (or rejects with) `401 INVALID_TOKEN`
   * for any other token, and `503 SERVICE_UNAVAILABLE` when its keys or status list cannot be fetched.
   */
  verify(token: string): MaybePromise<Principal> {
    const checked = this.tokens.principal(token);
    if (!(checked instanceof Promise)) return validPrincipal(checked);
    return checked.then(validPrincipal);
  }

  /** As `TesseraVerifier.authenticate`, for the app's bearer JWTs only; any other AppID is `404 APP_NOT_FOUND`. */
  authenticate(request: AuthenticationRequest): MaybePromise<Principal> {
    if (request.appId !== this.tokens.appId) throw appNotFound();
    const credentials = parseAuthorization(request.authorization);
    if (credentials.scheme === 'basic') throw basicAnonymousNotChecked();
    if (credentials.scheme === 'none') throw new TesseraError('UNAUTHORIZED', 'Authentication is required: Authorization: Bearer <token>.');
    const checked = this.tokens.principal(credentials.token);
    // No closure on the common path, where the token is in memory.
    if (!(checked instanceof Promise)) return applyRules(validPrincipal(checked), request);
    return checked.then((principal) => applyRules(validPrincipal(principal), request));
  }
}

function validPrincipal(principal: Principal | undefined): Principal {
  if (principal === undefined) throw invalidToken();
  return principal;
}

/** Basic anonymous access needs the app's configuration, which only the store has. */
function basicAnonymousNotChecked(): TesseraError {
  return new TesseraError(
    'INVALID_TOKEN',
    'This service checks JWT access tokens only: get an anonymous token (POST /api/apps/{appId}/oauth2/token) and send it as Authorization: Bearer <token>.',
  );
}
