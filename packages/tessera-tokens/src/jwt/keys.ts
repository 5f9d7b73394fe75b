import type { Clock } from '../clock.js';
import { LoadedUntilForgotten } from '../cache/loaded-until-forgotten.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { publicKeyOf, type JwtAlgorithm, type JwtVerificationKey } from './access-token.js';

/**
 * A key that signs JWT access tokens and status lists, as stored (`jwt_keys`). Published in the
 * JWKS from its creation until `publishedUntil`; the newest key whose `signsFrom` has come signs (a
 * key rolled ahead is published before it signs, so that verifiers caching the JWKS know it first).
 */
export interface StoredJwtKey {
  kid: string;
  algorithm: JwtAlgorithm;
  /** The public key as a JWK (`kty`, `crv`, `x`, and `y` for ES256): what the JWKS publishes. */
  publicJwk: Record<string, string>;
  /** The private key, encrypted (`src/jwt/key-encryption.ts` of the server); null once a newer key signs. */
  encryptedPrivateKey: Buffer | null;
  /** UNIX ms. */
  createdAt: number;
  /** UNIX ms: when it starts signing. */
  signsFrom: number;
  /** UNIX ms until which it is published (every token it signed has expired by then); null: while it signs. */
  publishedUntil: number | null;
}

/** The JWT keys as the store has them: the server's `JwtKeyStore` and what checking reads. */
export interface JwtKeyReads {
  listJwtKeys(): Promise<StoredJwtKey[]>;
}

/** Whether `key` is published at `now`: a token it signed may still be valid. */
export function isPublished(key: StoredJwtKey, now: number): boolean {
  return key.publishedUntil === null || key.publishedUntil > now;
}

/**
 * The published JWT keys, read from the store when first needed and kept in memory (a store that
 * never sees a JWT never reads them); `forget` (the store's change signal) reads them again.
 */
type LoadedKeys = Map<string, JwtVerificationKey & { publishedUntil: number | null }>;

export class JwtKeys {
  readonly #keys: LoadedUntilForgotten<LoadedKeys>;

  constructor(
    store: JwtKeyReads,
    private readonly clock: Clock,
  ) {
    this.#keys = new LoadedUntilForgotten(async () => verificationKeys(await store.listJwtKeys()));
  }

  /** The published key with this id, or undefined. */
  key(kid: string): MaybePromise<JwtVerificationKey | undefined> {
    return andThen(this.#keys.get(), (keys) => {
      const key = keys.get(kid);
      return key !== undefined && (key.publishedUntil === null || key.publishedUntil > this.clock.now()) ? key : undefined;
    });
  }

  forget(): void {
    this.#keys.forget();
  }
}

function verificationKeys(keys: readonly StoredJwtKey[]): LoadedKeys {
  return new Map(
    keys.map((key) => [
      key.kid,
      { kid: key.kid, algorithm: key.algorithm, publicKey: publicKeyOf(key.publicJwk), publishedUntil: key.publishedUntil },
    ]),
  );
}
