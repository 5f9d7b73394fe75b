import type { AppRecord } from '../apps/app.js';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import type { AttestationProvider } from '../principal.js';
import type { Keyring } from '../signing-keys/keyring.js';
import type { JwtAccessToken } from '../jwt/access-token.js';
import { ownKey } from '../cache/own-key.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { NO_CACHE_LOOKUPS, type CacheLookups } from '../metrics/cache-lookups.js';
import { anonymousTokenSignedBy, parseAnonymousToken, signAnonymousToken, type AnonymousTokenFacts } from './anonymous-token.js';
import { isExpired } from './expiry.js';
import type { RevokedTokens } from './revoked-tokens.js';

/** What a verified token takes in the cache: its 68 characters and what it says (measured: about 360 bytes). */
const VERIFIED_TOKEN_BYTES = 380;

/** A token whose MAC was verified: what it says, and for which app (one object: a check reads one place in memory, not two). */
interface VerifiedToken extends AnonymousTokenFacts {
  appId: string;
}

export interface IssuedAnonymousToken {
  token: string;
  /** UNIX ms: after the app's cut-off, even if this instance's clock is behind the one that set it. */
  issuedAt: number;
}

/**
 * Self-verifying anonymous tokens (`anonymous-token.ts`): made with the signing key, checked against
 * the active keys, the app's cut-off (`AppRecord.anonymousCutoff`) and the tokens revoked one by one.
 * A token verified before is found in a cache sized by memory by its text, so that a client's repeated use
 * costs a `Map` lookup instead of a MAC; the cache is emptied when the keys may have changed.
 */
export class AnonymousTokens {
  readonly #verified: LRUCache<string, VerifiedToken>;
  #generation = 0;

  /** `maxBytes`: what the verified tokens may take (`CacheBudget.anonymousTokens`); the least recently used go first. */
  constructor(
    /** The service's signing keys: the server's proof of work derives its HMAC keys from them too. */
    readonly keys: Keyring,
    readonly revoked: RevokedTokens,
    private readonly clock: Clock,
    maxBytes: number,
    private readonly lookups: CacheLookups = NO_CACHE_LOOKUPS,
  ) {
    this.#verified = new LRUCache<string, VerifiedToken>({ maxSize: maxBytes, sizeCalculation: () => VERIFIED_TOKEN_BYTES });
  }

  issue(
    app: AppRecord,
    now: number,
    expiresAt: number | null,
    attestation: AttestationProvider | null = null,
  ): MaybePromise<IssuedAnonymousToken> {
    const cutoff = app.anonymousCutoff;
    const issuedAt = cutoff !== null && cutoff >= now ? cutoff + 1 : now;
    return andThen(this.keys.signingKey(), (key) => ({
      token: signAnonymousToken(key, app.appId, issuedAt, expiresAt, attestation).token,
      issuedAt,
    }));
  }

  /** What the token says, if it is valid now in this app: signed for it by an active key, not expired, cut off or revoked. */
  check(app: AppRecord, token: string): MaybePromise<AnonymousTokenFacts | undefined> {
    const cached = this.#verified.get(token);
    if (cached !== undefined) {
      this.lookups.hit();
      return cached.appId === app.appId ? this.current(app, cached) : undefined;
    }
    this.lookups.miss();
    return andThen(this.verify(app, token), (facts) => facts && this.current(app, facts));
  }

  /** What the token says, if an active key signed it for this app (expired, cut off, revoked or not). */
  verify(app: AppRecord, token: string): MaybePromise<AnonymousTokenFacts | undefined> {
    const presented = parseAnonymousToken(token);
    if (presented === undefined) return undefined;
    const generation = this.#generation;
    return andThen(this.keys.key(presented.facts.keyId), (key) => {
      if (key === undefined || !anonymousTokenSignedBy(presented, key, app.appId)) return undefined;
      if (generation === this.#generation) this.#verified.set(ownKey(token), { ...presented.facts, appId: app.appId });
      return presented.facts;
    });
  }

  /** Whether the token was ended by the app's cut-off or its expiry (then it needs no revocation of its own). */
  ended(app: AppRecord, facts: AnonymousTokenFacts): boolean {
    return isExpired(this.clock.now(), facts.expiresAt) || (app.anonymousCutoff !== null && facts.issuedAt <= app.anonymousCutoff);
  }

  /** The keys may have changed: verify every token again. */
  forgetAll(): void {
    this.#generation++;
    this.#verified.clear();
    this.keys.forget();
  }

  /** The facts of a verified anonymous token (self-verifying, or a JWT), if it is valid now: not expired, cut off or revoked. */
  current(app: AppRecord, facts: AnonymousTokenFacts): MaybePromise<AnonymousTokenFacts | undefined> {
    if (this.ended(app, facts)) return undefined;
    return andThen(this.revoked.has(facts.id), (revoked) => (revoked ? undefined : facts));
  }
}

/** An anonymous JWT access token's facts as a self-verifying anonymous token's, for the checks they share (cut-off, revocations). */
export function anonymousFactsOf(token: JwtAccessToken): AnonymousTokenFacts {
  return {
    keyId: 0,
    issuedAt: token.issuedAt,
    expiresAt: token.expiresAt,
    id: token.id.toString('latin1'),
    attestation: token.attestation,
  };
}
