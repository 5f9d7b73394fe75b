import type { AppRecord } from '../apps/app.js';
import { LRUCache } from 'lru-cache';
import { AbsentKeys } from '../cache/absent-keys.js';
import type { Clock } from '../clock.js';
import { bytesEqualLatin1, digestsEqual, sha256 } from '../crypto.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { NO_CACHE_LOOKUPS, type CacheLookups } from '../metrics/cache-lookups.js';
import {
  ANONYMOUS_ID,
  anonymousBearer,
  TOKEN_SELECTOR,
  type AttestationProvider,
  type Principal,
  type PrincipalKind,
} from '../principal.js';
import { ANONYMOUS_TOKEN_LENGTH, type AnonymousTokenFacts } from './anonymous-token.js';
import { anonymousFactsOf, type AnonymousTokens } from './anonymous-tokens.js';
import { isExpired } from './expiry.js';
import type { TokenReads, TokenRecord } from './token-record.js';
import { parseAccessToken, type PresentedAccessToken } from './token.js';
import { jwtVerifier, looksLikeJwt, type JwtAccessToken } from '../jwt/access-token.js';
import type { JwtAccessTokens, JwtProblem, VerifiedJwt } from '../jwt/access-tokens.js';

/** What introspection tells of an active token. */
export interface ActiveToken {
  appId: string;
  kind: PrincipalKind;
  /** The principal's id: the app's admin id, or `ANONYMOUS`. */
  id: string;
  /** Who the token was issued to: the ClientID (the app's own, or a credential's) for an admin token, the AppID for an anonymous one. */
  clientId: string;
  /** What an admin token issued from a credential may do; null otherwise. */
  scopes: readonly string[] | null;
  /** UNIX ms. */
  issuedAt: number;
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
  /** For an anonymous token issued with an attestation: its provider. */
  attestation?: AttestationProvider;
}

/** What a check needs of a stored token. */
export type TokenFacts = Pick<TokenRecord, 'appId' | 'kind' | 'issuedAt' | 'expiresAt' | 'clientId' | 'scopes'>;

/** What a cached token takes: selector, facts, verifier (measured: about 280 bytes). */
const CACHED_TOKEN_BYTES = 300;

/** What a cached token takes with its ClientID and scopes, if it has them (about 50 bytes a scope). */
function cachedTokenBytes(token: TokenFacts): number {
  return token.scopes === null ? CACHED_TOKEN_BYTES : CACHED_TOKEN_BYTES + 100 + 50 * token.scopes.length;
}

/** A token checked before, with its verifier as latin1 (never its hash: the comparison needs no hashing then). */
interface CachedToken extends TokenFacts {
  verifier: string;
}

/** A presented token that matches a stored one: its selector, and what the store says of it. */
export interface MatchedToken {
  /** The selector as a latin1 string: the cache key, and `Principal[TOKEN_SELECTOR]`. */
  key: string;
  selector: Buffer;
  facts: TokenFacts;
}

export interface TokenCheckerOptions {
  /** Bytes the tokens verified before may take (`CacheBudget.storedTokens`); the least recently used go first. */
  maxBytes: number;
  /** Bytes for the selectors the store did not have, remembered for a short while. */
  absentBytes: number;
  lookups?: CacheLookups;
}

/**
 * Checks presented tokens: self-verifying anonymous tokens by their MAC (`AnonymousTokens`), stored
 * tokens (admin tokens, and anonymous tokens from before) against the store. What authentication,
 * introspection and revocation share. An unknown, malformed or forged token is `undefined`, never
 * an exception; the store's own failures (an unreachable database) are thrown. Knows nothing of HTTP.
 */
export class TokenChecker {
  /**
   * Tokens verified against the store, by selector, with their verifier. A client uses one token
   * for many requests, so a check is usually a Map lookup and one constant-time comparison of the
   * presented verifier with the one verified before (no hashing); the expiry is checked every time.
   * The verifier is kept in memory only, like the token in a request; the store holds its hash.
   * `forgetAll` empties the cache when the store signals a change made elsewhere.
   */
  readonly #cache: LRUCache<string, CachedToken>;
  /** Selectors the store did not have (made up, or of a token removed), for a short while. */
  readonly #absent: AbsentKeys;
  readonly #lookups: CacheLookups;
  /** Counts what was forgotten, so that a read begun before does not refill the cache. */
  #generation = 0;

  constructor(
    private readonly tokens: TokenReads,
    private readonly anonymous: AnonymousTokens,
    private readonly jwts: JwtAccessTokens,
    private readonly clock: Clock,
    options: TokenCheckerOptions,
  ) {
    this.#cache = new LRUCache<string, CachedToken>({ maxSize: options.maxBytes, sizeCalculation: cachedTokenBytes });
    this.#absent = new AbsentKeys(options.absentBytes, clock);
    this.#lookups = options.lookups ?? NO_CACHE_LOOKUPS;
  }

  /**
   * The principal a bearer token stands for in this app, or undefined: unknown, forged, expired, or
   * of another app. From memory for a token checked before, from the store otherwise.
   */
  principal(app: AppRecord, accessToken: string): MaybePromise<Principal | undefined> {
    if (accessToken.length === ANONYMOUS_TOKEN_LENGTH) {
      return andThen(this.anonymous.check(app, accessToken), (facts) => facts && anonymousPrincipal(app, facts));
    }
    if (looksLikeJwt(accessToken))
      return andThen(this.#jwtFacts(app, accessToken), (facts) => facts && this.#jwtPrincipal(app, accessToken, facts));
    const presented = parseAccessToken(accessToken);
    if (presented === undefined) return undefined;
    return this.#storedPrincipal(app, presented);
  }

  #storedPrincipal(app: AppRecord, presented: PresentedAccessToken): MaybePromise<Principal | undefined> {
    const key = presented.selector.toString('latin1');
    const found = this.#find(presented, key);
    // No closure on the common path, where the token is in memory.
    if (!(found instanceof Promise)) return found && this.#principalOf(app, key, found);
    return found.then((facts) => facts && this.#principalOf(app, key, facts));
  }

  /** What introspection tells of a token that is valid now in this app, or undefined. */
  async introspect(app: AppRecord, accessToken: string): Promise<ActiveToken | undefined> {
    const jwt = looksLikeJwt(accessToken) ? await this.#jwtFacts(app, accessToken) : undefined;
    if (accessToken.length === ANONYMOUS_TOKEN_LENGTH || jwt?.kind === 'anonymous') {
      const facts =
        jwt === undefined ? await this.anonymous.check(app, accessToken) : await this.anonymous.current(app, anonymousFactsOf(jwt));
      if (facts === undefined) return undefined;
      return {
        appId: app.appId,
        kind: 'anonymous',
        id: ANONYMOUS_ID,
        clientId: app.appId,
        issuedAt: facts.issuedAt,
        expiresAt: facts.expiresAt,
        scopes: null,
        ...(facts.attestation === null ? {} : { attestation: facts.attestation }),
      };
    }
    const presented = jwt === undefined ? parseAccessToken(accessToken) : presentedJwt(accessToken, jwt);
    if (presented === undefined) return undefined;
    const facts = await this.#find(presented, presented.selector.toString('latin1'));
    if (facts === undefined || !this.#valid(app, facts)) return undefined;
    const { kind, issuedAt, expiresAt, scopes } = facts;
    return {
      appId: app.appId,
      kind,
      id: principalId(app, kind),
      clientId: kind === 'admin' ? (facts.clientId ?? app.clientId) : app.appId,
      issuedAt,
      expiresAt,
      scopes,
    };
  }

  /** The stored token of this app that `accessToken` is (expired or not), read from the store; undefined otherwise (a self-verifying one too). */
  async match(app: AppRecord, accessToken: string): Promise<MatchedToken | undefined> {
    const jwt = looksLikeJwt(accessToken) ? await this.#jwtFacts(app, accessToken) : undefined;
    const presented = jwt === undefined ? parseAccessToken(accessToken) : jwt.kind === 'admin' ? presentedJwt(accessToken, jwt) : undefined;
    if (presented === undefined) return undefined;
    const stored = await this.tokens.findBySelector(presented.selector);
    if (stored === undefined || stored.appId !== app.appId || !digestsEqual(sha256(presented.verifier), stored.verifierHash))
      return undefined;
    return { key: presented.selector.toString('latin1'), selector: presented.selector, facts: stored };
  }

  /** Why a refused bearer token was refused, when it is a JWT (`JwtAccessTokens.problem`), for the audit log; undefined otherwise. */
  refusal(app: AppRecord, accessToken: string): MaybePromise<JwtProblem | undefined> {
    return looksLikeJwt(accessToken) ? this.jwts.problem(app, accessToken, this.clock.now()) : undefined;
  }

  /** What a presented JWT access token of this app says (an anonymous one verified), or undefined (`JwtAccessTokens`). */
  jwt(app: AppRecord, accessToken: string): MaybePromise<JwtAccessToken | undefined> {
    return looksLikeJwt(accessToken) ? this.#jwtFacts(app, accessToken) : undefined;
  }

  #jwtFacts(app: AppRecord, accessToken: string): MaybePromise<VerifiedJwt | undefined> {
    return this.jwts.read(app, accessToken);
  }

  #jwtPrincipal(app: AppRecord, accessToken: string, jwt: VerifiedJwt): MaybePromise<Principal | undefined> {
    if (jwt.kind === 'admin') return this.#storedPrincipal(app, presentedJwt(accessToken, jwt));
    return andThen(this.anonymous.current(app, anonymousFactsOf(jwt)), (facts) => facts && anonymousPrincipal(app, facts));
  }

  /** Forgets one token (being revoked): a check that read its record meanwhile does not cache it. */
  forget(key: string): void {
    this.#generation++;
    this.#cache.delete(key);
  }

  /** Forgets every cached token (after a change made elsewhere: a revocation, a deleted app), and every absent one. */
  forgetAll(): void {
    this.#generation++;
    this.#cache.clear();
    this.#absent.clear();
  }

  /** What is stored of a presented token whose verifier matches (of any app, expired or not), or undefined. */
  #find(presented: PresentedAccessToken, key: string): MaybePromise<TokenFacts | undefined> {
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      this.#lookups.hit();
      return bytesEqualLatin1(presented.verifier, cached.verifier) ? cached : undefined;
    }
    if (this.#absent.has(key)) {
      this.#lookups.hit();
      return undefined;
    }
    this.#lookups.miss();
    const generation = this.#generation;
    return andThen(this.tokens.findBySelector(presented.selector), (stored) => this.#remember(presented, key, stored, generation));
  }

  /** What a read of the store found for a presented token; kept unless the cache was emptied during the read (the record may predate that change). */
  #remember(presented: PresentedAccessToken, key: string, stored: TokenRecord | undefined, generation: number): TokenFacts | undefined {
    if (stored === undefined) {
      if (generation === this.#generation) this.#absent.add(key);
      return undefined;
    }
    if (!digestsEqual(sha256(presented.verifier), stored.verifierHash)) return undefined;
    if (generation === this.#generation) {
      const { appId, kind, issuedAt, expiresAt, clientId, scopes } = stored;
      // A string of its own, not `presented.verifier`: a view into an 8 KiB slab of Node's buffer
      // pool, which keeping would keep alive (about 80 MB per 10⁵ cached tokens).
      const verifier = presented.verifier.toString('latin1');
      this.#cache.set(key, { appId, kind, issuedAt, expiresAt, clientId, scopes, verifier });
    }
    return stored;
  }

  /**
   * Whether a stored token is valid now in this app: not expired, and, for an anonymous one, issued
   * after the app's cut-off (a revoke-all removes them, but one stored while it ran would stay).
   */
  #valid(app: AppRecord, token: TokenFacts): boolean {
    if (token.appId !== app.appId || isExpired(this.clock.now(), token.expiresAt)) return false;
    return token.kind === 'admin' || app.anonymousCutoff === null || token.issuedAt > app.anonymousCutoff;
  }

  #principalOf(app: AppRecord, key: string, token: TokenFacts): Principal | undefined {
    if (!this.#valid(app, token)) return undefined;
    return {
      appId: app.appId,
      kind: token.kind,
      id: principalId(app, token.kind),
      auth: 'bearer',
      expiresAt: token.expiresAt,
      scopes: token.scopes,
      clientId: token.clientId,
      [TOKEN_SELECTOR]: key,
    };
  }
}

/** A JWT admin token as the stored token it is matched with: its `jti` is the selector, its whole text makes the verifier. */
function presentedJwt(accessToken: string, jwt: VerifiedJwt): PresentedAccessToken {
  return { selector: jwt.id, verifier: jwt.verifier ?? jwtVerifier(accessToken) };
}

/** `Principal[TOKEN_SELECTOR]` of a self-verifying token: its id, one character longer than any stored token's selector. */
export function anonymousTokenKey(facts: AnonymousTokenFacts): string {
  return `a${facts.id}`;
}

function anonymousPrincipal(app: AppRecord, facts: AnonymousTokenFacts): Principal {
  return anonymousBearer(app.appId, facts.expiresAt, facts.attestation, anonymousTokenKey(facts));
}

export function principalId(app: AppRecord, kind: PrincipalKind): string {
  return kind === 'admin' ? app.adminId : ANONYMOUS_ID;
}
