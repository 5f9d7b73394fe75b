import type { AppRecord } from '../apps/app.js';
import { BoundedCache } from '../bounded-cache.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { Clock } from '../clock.js';
import { clientSecretDigest, credentialsEqual, digestsEqual, sha256 } from '../crypto.js';
import { TesseraError } from '../errors.js';
import type { RateLimits } from '../limits/rate-limits.js';
import { ANONYMOUS_ID, type Principal, type PrincipalKind } from '../principal.js';
import { expiresInSeconds, isExpired, resolveExpiry } from './expiry.js';
import type { TokenRecord, TokenStore } from './store.js';
import { generateAccessToken, parseAccessToken } from './token.js';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface IssuedToken {
  /** The app's admin id for an admin token, `ANONYMOUS` for an anonymous one. */
  id: string;
  accessToken: string;
  /** Seconds from the request to the expiry, rounded down (`NEVER_EXPIRES_IN` for never). */
  expiresIn: number;
  kind: PrincipalKind;
}

/** Issues tokens for an app's credentials and resolves tokens to principals. Knows nothing of HTTP. */
export class TokenService {
  /**
   * Tokens verified against the store, by selector, with their verifier. A client uses one token
   * for many requests, so a check is usually a Map lookup and one constant-time comparison of the
   * presented verifier with the one verified before (no hashing); the expiry is checked every time.
   * The verifier is kept in memory only, like the token in a request; the store holds its hash.
   * `forgetCachedTokens` empties the cache when the store signals a change made elsewhere.
   */
  readonly #cache: BoundedCache<string, { token: TokenRecord; verifier: Buffer }>;
  /** Counts `forgetCachedTokens` calls, so that a read begun before one does not refill the cache. */
  #generation = 0;

  constructor(
    private readonly tokens: TokenStore,
    private readonly clock: Clock,
    private readonly limits: RateLimits,
    cachedTokens = 100_000,
  ) {
    this.#cache = new BoundedCache(cachedTokens);
  }

  async issue(app: AppRecord, credentials: ClientCredentials, requestedExpiresAt: number | null): Promise<IssuedToken> {
    const now = this.clock.now();
    const kind = await this.authenticateClient(app, credentials);
    const maxLifetime =
      kind === 'admin' ? app.configuration.adminTokenMaxLifetimeSeconds : app.configuration.anonymousTokenMaxLifetimeSeconds;
    const expiresAt = resolveExpiry(now, requestedExpiresAt, maxLifetime);
    const { token, selector, verifierHash } = generateAccessToken(now);
    await this.tokens.insert({ selector, verifierHash, appId: app.appId, kind, issuedAt: now, expiresAt });
    return { id: principalId(app, kind), accessToken: token, expiresIn: expiresInSeconds(now, expiresAt), kind };
  }

  /**
   * The principal a bearer token stands for in this app; `INVALID_TOKEN` (thrown or rejected) for
   * anything else. Answers from memory for a token checked before, from the store otherwise.
   */
  verify(app: AppRecord, accessToken: string): MaybePromise<Principal> {
    const presented = parseAccessToken(accessToken);
    if (presented === undefined) throw invalidToken();
    const key = presented.selector.toString('latin1');
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      if (!digestsEqual(presented.verifier, cached.verifier)) throw invalidToken();
      return this.principalOf(app, cached.token);
    }
    const generation = this.#generation;
    return this.tokens.findBySelector(presented.selector).then((stored) => {
      if (stored === undefined || !digestsEqual(sha256(presented.verifier), stored.verifierHash)) throw invalidToken();
      // Not if the cache was emptied during the read: the record may predate that change.
      if (generation === this.#generation) this.#cache.set(key, { token: stored, verifier: presented.verifier });
      return this.principalOf(app, stored);
    });
  }

  private principalOf(app: AppRecord, token: TokenRecord): Principal {
    if (token.appId !== app.appId || isExpired(this.clock.now(), token.expiresAt)) throw invalidToken();
    return { appId: app.appId, kind: token.kind, id: principalId(app, token.kind), auth: 'bearer', expiresAt: token.expiresAt };
  }

  /** Forgets every cached token record (after a change made elsewhere: a revocation, a deleted app). */
  forgetCachedTokens(): void {
    this.#generation++;
    this.#cache.clear();
  }

  /**
   * `client_id` = AppID: anonymous (the AppKey is checked only if the app asks for it).
   * Anything else is an admin attempt: an unknown ClientID and a wrong ClientSecret take the same
   * path, do the same work, and fail the same way.
   */
  private async authenticateClient(app: AppRecord, { clientId, clientSecret }: ClientCredentials): Promise<PrincipalKind> {
    if (clientId === app.appId) {
      if (app.configuration.requireAppKey && !credentialsEqual(clientSecret, app.appKey)) throw invalidClient();
      return 'anonymous';
    }
    await this.limits.checkAdminAttempt(app.appId);
    const clientIdMatches = credentialsEqual(clientId, app.clientId);
    const secretMatches = digestsEqual(clientSecretDigest(clientSecret), app.clientSecretHash);
    if (!(clientIdMatches && secretMatches)) {
      await this.limits.recordAdminFailure(app.appId);
      throw invalidClient();
    }
    return 'admin';
  }
}

function principalId(app: AppRecord, kind: PrincipalKind): string {
  return kind === 'admin' ? app.adminId : ANONYMOUS_ID;
}

export function invalidClient(): TesseraError {
  return new TesseraError('invalid_client', 'The client credentials are invalid.');
}

export function invalidToken(): TesseraError {
  return new TesseraError('INVALID_TOKEN', 'The access token is invalid, expired or revoked.');
}
