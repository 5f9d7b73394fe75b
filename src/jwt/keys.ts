import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { MAX_JWT_LIFETIME_MS, type JwtAlgorithm, type JwtSigningKey } from 'tessera-tokens/internal/jwt/access-token.js';
import { isPublished, type StoredJwtKey } from 'tessera-tokens/internal/jwt/keys.js';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import type { KeyEncryption } from './key-encryption.js';
import type { JwtKeyStore } from './store.js';

/** How long a key rotated in is published before it signs, by default: past every verifier's cache of the JWKS (`JWKS_MAX_AGE_SECONDS`, ×12). */
export const DEFAULT_ROLL_AHEAD_MS = 3_600_000;
/** What the JWKS may be cached for (`Cache-Control: max-age`). */
export const JWKS_MAX_AGE_SECONDS = 300;

/** What an operator sees of a JWT key: never its private key. */
export interface JwtKeyDescription {
  kid: string;
  algorithm: JwtAlgorithm;
  /** `pending`: published, signs from `signsFrom`; `signing`; `verifying`: published until `publishedUntil`, signs no more. */
  state: 'pending' | 'signing' | 'verifying';
  createdAt: string;
  signsFrom: string;
  publishedUntil: string | null;
}

/** A key as the JWKS publishes it. */
export interface PublishedJwk {
  kty: string;
  crv: string;
  x: string;
  y?: string;
  kid: string;
  alg: JwtAlgorithm;
  use: 'sig';
}

interface LoadedSigningKey {
  key: JwtSigningKey;
  /** UNIX ms until which it is the signing key: the next key's `signsFrom`, or never. */
  until: number;
}

/**
 * The keys that sign JWT access tokens and status lists: the signing key decrypted once and kept in
 * memory (until a key rolled ahead starts signing, or the store's change signal), rotations that
 * publish the new key ahead of its first signature and keep the old one published until every token
 * it signed has expired, an emergency retirement, and the JWKS.
 */
export class JwtKeyService {
  #signing: LoadedSigningKey | undefined;
  #loading: Promise<LoadedSigningKey> | undefined;
  #generation = 0;

  constructor(
    private readonly store: JwtKeyStore,
    private readonly clock: Clock,
    /** Undefined when the operator set no KEY_ENCRYPTION_KEY (PostgreSQL): JWT keys cannot be made nor used. */
    private readonly encryption: KeyEncryption | undefined,
    /** Called after a change by this process, so that its caches read the keys again at once. */
    private readonly onChange: () => void = () => {},
  ) {}

  /** The key that signs now; the first one is made when first needed. */
  signingKey(): MaybePromise<JwtSigningKey> {
    const loaded = this.#signing;
    if (loaded !== undefined && this.clock.now() < loaded.until) return loaded.key;
    return this.#load().then((signing) => signing.key);
  }

  /** The keys may have changed (the change signal): read them again when next needed. */
  forget(): void {
    this.#generation++;
    this.#signing = undefined;
    this.#loading = undefined;
  }

  async list(): Promise<JwtKeyDescription[]> {
    const now = this.clock.now();
    const keys = (await this.store.listJwtKeys()).filter((key) => isPublished(key, now));
    const signing = signingKeyOf(keys, now);
    return keys.map((key) => ({
      kid: key.kid,
      algorithm: key.algorithm,
      state:
        key === signing ? 'signing' : key.signsFrom > now && (signing === undefined || madeAfter(key, signing)) ? 'pending' : 'verifying',
      createdAt: new Date(key.createdAt).toISOString(),
      signsFrom: new Date(key.signsFrom).toISOString(),
      publishedUntil: key.publishedUntil === null ? null : new Date(key.publishedUntil).toISOString(),
    }));
  }

  /**
   * Adds a key, published at once and signing `aheadMs` later; the keys before it stay published
   * until every token they may sign until then has expired (`MAX_JWT_LIFETIME_MS` after it signs).
   */
  async rotate({ algorithm, aheadMs }: { algorithm?: JwtAlgorithm; aheadMs?: number }): Promise<JwtKeyDescription[]> {
    const now = this.clock.now();
    const keys = await this.store.listJwtKeys();
    const current = signingKeyOf(keys, now);
    // Made after every key before it, even within the same millisecond: the key made last signs.
    const createdAt = Math.max(now, ...keys.map((key) => key.createdAt + 1));
    // With no key signing yet, no verifier has read a JWKS to be ahead of: the first key signs at once.
    const signsFrom = current === undefined ? now : now + (aheadMs ?? DEFAULT_ROLL_AHEAD_MS);
    const key = this.#newKey(algorithm ?? current?.algorithm ?? 'EdDSA', createdAt, signsFrom);
    await this.store.insertJwtKey(key);
    await this.store.supersede(key.kid, key.signsFrom + MAX_JWT_LIFETIME_MS);
    this.#changed();
    return this.list();
  }

  /**
   * Ends a key's publication now: every token it signed is refused here at once and by verifiers once
   * they read the JWKS again. The signing key cannot be retired while no other key can sign.
   */
  async retire(kid: string): Promise<JwtKeyDescription[]> {
    const now = this.clock.now();
    const keys = (await this.store.listJwtKeys()).filter((key) => isPublished(key, now));
    const key = keys.find((candidate) => candidate.kid === kid);
    if (key === undefined) throw new TesseraError('NOT_FOUND', `There is no published JWT key ${kid}; tessera keys list shows them.`);
    if (signingKeyOf(keys, now) === key) {
      throw new TesseraError(
        'invalid_request',
        `JWT key ${kid} signs new tokens; rotate first (tessera keys rotate --jwt --ahead 0), then retire it.`,
      );
    }
    if ((await this.store.retireJwtKey(kid, now)) === undefined)
      throw new TesseraError('NOT_FOUND', `There is no published JWT key ${kid}; tessera keys list shows them.`);
    this.#changed();
    return this.list();
  }

  /** The JWKS: every published key's public JWK, with its id, algorithm and use. */
  async jwks(): Promise<{ keys: PublishedJwk[] }> {
    const now = this.clock.now();
    const keys = (await this.store.listJwtKeys()).filter((key) => isPublished(key, now));
    return {
      keys: keys.map(({ publicJwk: { kty, crv, x, y }, kid, algorithm }) => ({
        kty: kty!,
        crv: crv!,
        x: x!,
        ...(y === undefined ? {} : { y }),
        kid,
        alg: algorithm,
        use: 'sig' as const,
      })),
    };
  }

  /**
   * Rolls a new key in (`DEFAULT_ROLL_AHEAD_MS` ahead, the signing key's algorithm) if the signing
   * key was made `maxAgeMs` ago or more and none is pending yet (housekeeping, JWT_KEY_ROTATION_DAYS).
   * Two instances may roll at once: then two keys are published, and the later one signs.
   */
  async rotateIfOlderThan(maxAgeMs: number): Promise<boolean> {
    const now = this.clock.now();
    const keys = (await this.store.listJwtKeys()).filter((key) => isPublished(key, now));
    const signing = signingKeyOf(keys, now);
    if (signing === undefined || now - signing.createdAt < maxAgeMs || keys.some((key) => key.signsFrom > now && madeAfter(key, signing)))
      return false;
    await this.rotate({});
    return true;
  }

  /** Housekeeping: erases the private keys that sign no more, deletes the keys no longer published. */
  async tidy(): Promise<number> {
    const now = this.clock.now();
    return (await this.store.erasePrivateKeys(now)) + (await this.store.deleteUnpublishedJwtKeys(now));
  }

  #changed(): void {
    this.forget();
    this.onChange();
  }

  #load(): Promise<LoadedSigningKey> {
    if (this.#loading !== undefined) return this.#loading;
    const generation = this.#generation;
    const loading = (async () => {
      const now = this.clock.now();
      let keys = await this.store.listJwtKeys();
      let signing = signingKeyOf(keys, now);
      if (signing === undefined) {
        // The first key: nothing has cached a JWKS without it, so it signs at once.
        await this.store.insertJwtKey(this.#newKey('EdDSA', now, now));
        keys = await this.store.listJwtKeys();
        signing = signingKeyOf(keys, now)!;
      }
      if (signing.encryptedPrivateKey === null) throw new Error(`the JWT key ${signing.kid} signs but has no private key`);
      // Until a key made after it comes due.
      const next = keys
        .filter((key) => key.signsFrom > now && isPublished(key, now) && madeAfter(key, signing))
        .map((key) => key.signsFrom);
      const loaded: LoadedSigningKey = {
        key: { kid: signing.kid, algorithm: signing.algorithm, privateKey: this.#privateKeyOf(signing) },
        until: Math.min(Infinity, ...next),
      };
      if (generation === this.#generation) this.#signing = loaded;
      return loaded;
    })().finally(() => {
      if (this.#loading === loading) this.#loading = undefined;
    });
    this.#loading = loading;
    return loading;
  }

  #privateKeyOf(key: StoredJwtKey): KeyObject {
    const der = this.#encryption().decrypt(key.encryptedPrivateKey!, key.kid);
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  }

  #newKey(algorithm: JwtAlgorithm, createdAt: number, signsFrom: number): StoredJwtKey {
    const { publicKey, privateKey } =
      algorithm === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const publicJwk = publicKey.export({ format: 'jwk' }) as Record<string, string>;
    const kid = thumbprint(publicJwk);
    return {
      kid,
      algorithm,
      publicJwk,
      encryptedPrivateKey: this.#encryption().encrypt(privateKey.export({ format: 'der', type: 'pkcs8' }), kid),
      createdAt,
      signsFrom,
      publishedUntil: null,
    };
  }

  #encryption(): KeyEncryption {
    if (this.encryption === undefined) {
      throw new TesseraError(
        'SERVICE_UNAVAILABLE',
        'JWT access tokens need the key their signing keys are encrypted with: the operator sets KEY_ENCRYPTION_KEY (docs/deployment.md).',
      );
    }
    return this.encryption;
  }
}

/**
 * The key that signs at `now`: of the published keys whose `signsFrom` has come, the one made last.
 * A rotation wins over the ones before it, even over a key rolled ahead earlier that is not yet due
 * (`--ahead 0` after `--ahead 3600` signs at once, and the earlier key never does).
 */
function signingKeyOf(keys: readonly StoredJwtKey[], now: number): StoredJwtKey | undefined {
  let signing: StoredJwtKey | undefined;
  for (const key of keys) {
    if (key.signsFrom > now || !isPublished(key, now) || key.encryptedPrivateKey === null) continue;
    if (signing === undefined || madeAfter(key, signing)) signing = key;
  }
  return signing;
}

/** Whether `key` was made after `other` (rotations in one millisecond are told apart by their ids). */
function madeAfter(key: StoredJwtKey, other: StoredJwtKey): boolean {
  return key.createdAt > other.createdAt || (key.createdAt === other.createdAt && key.kid > other.kid);
}

/** The key's id: its JWK thumbprint (RFC 7638), base64url. */
function thumbprint(jwk: Record<string, string>): string {
  const members = jwk.kty === 'OKP' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}
