import type { AppRecord } from '../apps/app.js';
import { BoundedCache } from '../bounded-cache.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { Clock } from '../clock.js';
import { clientSecretDigest, credentialsEqual, digestsEqual, sha256 } from '../crypto.js';
import { TesseraError } from '../errors.js';
import { NO_CLIENT, type Actor, type RequestContext } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import type { RateLimits } from '../limits/rate-limits.js';
import { ANONYMOUS_ID, type Principal, type PrincipalKind } from '../principal.js';
import { expiresInSeconds, isExpired, resolveExpiry } from './expiry.js';
import { appTokensRevoked, type RevocationKind } from './revocation.js';
import type { TokenRecord, TokenStore } from './store.js';
import { generateAccessToken, parseAccessToken } from './token.js';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** What introspection tells of an active token. */
export interface ActiveToken {
  appId: string;
  kind: PrincipalKind;
  /** The principal's id: the app's admin id, or `ANONYMOUS`. */
  id: string;
  /** Who the token was issued to: the ClientID for an admin token, the AppID for an anonymous one. */
  clientId: string;
  /** UNIX ms. */
  issuedAt: number;
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
}

/** What a check needs of a stored token. */
type TokenFacts = Pick<TokenRecord, 'appId' | 'kind' | 'issuedAt' | 'expiresAt'>;

/** A token checked before, with its verifier (never its hash: the comparison needs no hashing then). */
interface CachedToken extends TokenFacts {
  verifier: Buffer;
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
  readonly #cache: BoundedCache<string, CachedToken>;
  /** Counts `forgetCachedTokens` calls, so that a read begun before one does not refill the cache. */
  #generation = 0;

  constructor(
    private readonly tokens: TokenStore,
    private readonly clock: Clock,
    private readonly limits: RateLimits,
    /** Absent where tokens are only checked (the middleware of other services). */
    private readonly events?: EventLog,
    cachedTokens = 100_000,
  ) {
    this.#cache = new BoundedCache(cachedTokens);
  }

  async issue(
    app: AppRecord,
    credentials: ClientCredentials,
    requestedExpiresAt: number | null,
    context: RequestContext = NO_CLIENT,
  ): Promise<IssuedToken> {
    const now = this.clock.now();
    const kind = await this.authenticateClient(app, credentials, context);
    const maxLifetime =
      kind === 'admin' ? app.configuration.adminTokenMaxLifetimeSeconds : app.configuration.anonymousTokenMaxLifetimeSeconds;
    const expiresAt = resolveExpiry(now, requestedExpiresAt, maxLifetime);
    const { token, selector, verifierHash } = generateAccessToken(now);
    await this.tokens.insert({ selector, verifierHash, appId: app.appId, kind, issuedAt: now, expiresAt });
    this.events?.record('token.issued', app.appId, context, kind, { expiresAt });
    return { id: principalId(app, kind), accessToken: token, expiresIn: expiresInSeconds(now, expiresAt), kind };
  }

  /**
   * The principal a bearer token stands for in this app; `INVALID_TOKEN` (thrown or rejected) for
   * anything else. Answers from memory for a token checked before, from the store otherwise.
   */
  verify(app: AppRecord, accessToken: string): MaybePromise<Principal> {
    const found = this.#find(accessToken);
    // No closure on the common path, where the token is in memory.
    return found instanceof Promise ? found.then((token) => this.principalOf(app, token)) : this.principalOf(app, found);
  }

  /** The stored record of a token that is valid now in this app, or undefined. */
  async introspect(app: AppRecord, accessToken: string): Promise<ActiveToken | undefined> {
    try {
      const { appId, kind, issuedAt, expiresAt } = await this.#find(accessToken);
      if (appId !== app.appId || isExpired(this.clock.now(), expiresAt)) return undefined;
      return { appId, kind, id: principalId(app, kind), clientId: kind === 'admin' ? app.clientId : app.appId, issuedAt, expiresAt };
    } catch (error) {
      if (error instanceof TesseraError && error.code === 'INVALID_TOKEN') return undefined;
      throw error;
    }
  }

  /**
   * RFC 7009: revokes `accessToken` if it is a token of this app (an unknown one is not an error).
   * An admin may revoke any token of its app; anyone else only the token it authenticates with.
   */
  async revoke(app: AppRecord, caller: { kind: PrincipalKind; token: string | undefined }, accessToken: string, context: RequestContext): Promise<void> {
    const own = caller.token !== undefined && credentialsEqual(accessToken, caller.token);
    if (caller.kind !== 'admin' && !own) {
      throw new TesseraError('ADMIN_REQUIRED', 'Only an admin token may revoke a token other than the one it is sent with.');
    }
    const presented = parseAccessToken(accessToken);
    if (presented === undefined) return;
    const stored = await this.tokens.findBySelector(presented.selector);
    if (stored === undefined || stored.appId !== app.appId || !digestsEqual(sha256(presented.verifier), stored.verifierHash)) return;
    // Forget it before and after the delete: a check that read the record meanwhile does not cache it.
    this.#forget(presented.selector);
    if (!(await this.tokens.delete(presented.selector))) return;
    this.#forget(presented.selector);
    this.events?.record('token.revoked', app.appId, context, caller.kind, { kind: stored.kind, scope: 'token', count: 1 });
  }

  /**
   * Revokes every token of an app, or every one of a kind, with its `token.revoked` event in the same
   * transaction; returns how many there were.
   */
  async revokeAll(appId: string, kind: RevocationKind, context: RequestContext, actor: Actor | null): Promise<number> {
    const stamp = await this.events?.stamp(appId, context, actor);
    const count = await this.tokens.deleteByApp(appId, kind, (removed) =>
      stamp === undefined ? [] : [appTokensRevoked(stamp, kind, removed)],
    );
    this.forgetCachedTokens();
    return count;
  }

  /**
   * The record of a token whose verifier matches (of any app, expired or not); `INVALID_TOKEN` (thrown
   * or rejected) otherwise. From memory for a token checked before, from the store otherwise.
   */
  #find(accessToken: string): MaybePromise<TokenFacts> {
    const presented = parseAccessToken(accessToken);
    if (presented === undefined) throw invalidToken();
    const key = presented.selector.toString('latin1');
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      if (!digestsEqual(presented.verifier, cached.verifier)) throw invalidToken();
      return cached;
    }
    const generation = this.#generation;
    return this.tokens.findBySelector(presented.selector).then((stored) => {
      if (stored === undefined || !digestsEqual(sha256(presented.verifier), stored.verifierHash)) throw invalidToken();
      // Not if the cache was emptied during the read: the record may predate that change.
      if (generation === this.#generation) {
        const { appId, kind, issuedAt, expiresAt } = stored;
        // A copy outside Node's shared buffer pool: `presented.verifier` is a view into an 8 KiB slab,
        // and keeping it would keep the whole slab alive (about 80 MB per 10⁵ cached tokens).
        const verifier = Buffer.allocUnsafeSlow(presented.verifier.length);
        presented.verifier.copy(verifier);
        this.#cache.set(key, { appId, kind, issuedAt, expiresAt, verifier });
      }
      return stored;
    });
  }

  #forget(selector: Buffer): void {
    this.#generation++;
    this.#cache.delete(selector.toString('latin1'));
  }

  private principalOf(app: AppRecord, token: TokenFacts): Principal {
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
  private async authenticateClient(app: AppRecord, { clientId, clientSecret }: ClientCredentials, context: RequestContext): Promise<PrincipalKind> {
    if (clientId === app.appId) {
      if (app.configuration.requireAppKey && !credentialsEqual(clientSecret, app.appKey)) {
        this.events?.record('token.refused', app.appId, context, 'anonymous', { reason: 'invalid_client' });
        throw invalidClient();
      }
      return 'anonymous';
    }
    const clientIdMatches = credentialsEqual(clientId, app.clientId);
    const secretMatches = digestsEqual(clientSecretDigest(clientSecret), app.clientSecretHash);
    // The limiter is asked only after the check, with no await in between, so that attempts are
    // counted in the order they are decided: of any burst, only the first failures of the minute
    // are answered 401; every later attempt from that address (or, past the app's ceiling, on that
    // app), the right secret included, gets 429.
    if (!(clientIdMatches && secretMatches)) {
      await this.limits.recordAdminFailure(app.appId, context.clientAddress);
      this.events?.record('token.refused', app.appId, context, 'admin', { reason: 'invalid_client' });
      throw invalidClient();
    }
    await this.limits.checkAdminAttempt(app.appId, context.clientAddress);
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
