import { LRUCache } from 'lru-cache';
import type { AppRecord } from '../apps/app.js';
import { ownKey } from '../cache/own-key.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { NO_CACHE_LOOKUPS, type CacheLookups } from '../metrics/cache-lookups.js';
import {
  ACCESS_TOKEN_TYPE,
  accessTokenFacts,
  JWT_ALGORITHMS,
  jwtVerifier,
  parseJwt,
  signedBy,
  type JwtAccessToken,
} from './access-token.js';
import type { JwtKeys } from './keys.js';

/** What a verified token takes in the cache: its text (about 500 characters) and what it says. */
export const VERIFIED_TOKEN_BYTES = 1200;

export type JwtProblem = 'algorithm' | 'malformed' | 'other_app' | 'unknown_key' | 'signature' | 'expired' | 'revoked';

/** Whether a token's header names an algorithm that is not one of the keys' (`none`, `HS256`, …). */
function namesOtherAlgorithm(token: string): boolean {
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8'));
    const alg = typeof header === 'object' && header !== null ? (header as { alg?: unknown }).alg : undefined;
    return typeof alg === 'string' && !(JWT_ALGORITHMS as readonly string[]).includes(alg);
  } catch {
    return false;
  }
}

/** A verified token: what it says, and for an admin token the verifier its stored row is matched by. */
export interface VerifiedJwt extends JwtAccessToken {
  /** `jwtVerifier` of the token: an admin token's row holds its hash. */
  verifier: Buffer | null;
}

/**
 * JWT access tokens as this service and its verifiers check them against the store: by their
 * signature once, then by their text, remembered in a cache sized by memory (a client uses one
 * token for many requests). An admin token is then matched to its stored row, as an opaque one is
 * (`jwtVerifier`): the row says what it may do, and its removal ends it at once. An anonymous token
 * is checked against the app's cut-off and the tokens revoked one by one, as a self-verifying one is.
 */
export class JwtAccessTokens {
  readonly #verified: LRUCache<string, VerifiedJwt>;
  #generation = 0;

  constructor(
    readonly keys: JwtKeys,
    maxBytes: number,
    private readonly lookups: CacheLookups = NO_CACHE_LOOKUPS,
  ) {
    this.#verified = new LRUCache<string, VerifiedJwt>({ maxSize: maxBytes, sizeCalculation: () => VERIFIED_TOKEN_BYTES });
  }

  /**
   * What a presented JWT of this app says, if it is one of this service's access tokens, signed by
   * a published key. Undefined otherwise.
   */
  read(app: AppRecord, token: string): MaybePromise<VerifiedJwt | undefined> {
    const cached = this.#verified.get(token);
    if (cached !== undefined) {
      this.lookups.hit();
      return cached.appId === app.appId ? cached : undefined;
    }
    const parsed = parseJwt(token, ACCESS_TOKEN_TYPE);
    const facts = parsed && accessTokenFacts(parsed);
    if (parsed === undefined || facts === undefined || facts.appId !== app.appId) return undefined;
    const generation = this.#generation;
    return andThen(this.keys.key(facts.kid), (key) => {
      if (key === undefined) return undefined;
      this.lookups.miss();
      if (!signedBy(parsed, key)) return undefined;
      const verified = { ...facts, verifier: facts.kind === 'admin' ? jwtVerifier(token) : null };
      if (generation === this.#generation) this.#verified.set(ownKey(token), verified);
      return verified;
    });
  }

  /**
   * Why a presented JWT was refused, for the audit log (the refusal path only: it verifies again):
   * `algorithm` (`none`, an HMAC, anything but the keys' own), `malformed`, `other_app`,
   * `unknown_key` (never published, or no longer), `signature`, `expired`, or `revoked`.
   */
  problem(app: AppRecord, token: string, now: number): MaybePromise<JwtProblem> {
    const parsed = parseJwt(token, ACCESS_TOKEN_TYPE);
    if (parsed === undefined) return namesOtherAlgorithm(token) ? 'algorithm' : 'malformed';
    const facts = accessTokenFacts(parsed);
    if (facts === undefined) return 'malformed';
    if (facts.appId !== app.appId) return 'other_app';
    return andThen(this.keys.key(facts.kid), (key) => {
      if (key === undefined) return 'unknown_key';
      if (!signedBy(parsed, key)) return 'signature';
      return facts.expiresAt <= now ? 'expired' : 'revoked';
    });
  }

  /** The keys may have changed: verify every token again. */
  forgetAll(): void {
    this.#generation++;
    this.#verified.clear();
    this.keys.forget();
  }
}
