import { randomBytes } from 'node:crypto';

/**
 * A key that signs anonymous tokens (`src/tokens/anonymous-token.ts`). Keys live in the store, so
 * that every instance and every `TesseraVerifier` shares them. The newest active key signs; every
 * active key verifies; a retired key verifies nothing, and its secret is erased.
 */
export interface StoredSigningKey {
  /** 1, 2, 3…: never reused. Carried in every token the key signs. */
  id: number;
  /** 32 random bytes; null once the key is retired. */
  secret: Buffer | null;
  /** UNIX ms. */
  createdAt: number;
  /** UNIX ms, or null while the key is active. */
  retiredAt: number | null;
}

export const KEY_SECRET_BYTES = 32;
/** Key ids take two bytes in a token. */
export const MAX_KEY_ID = 0xffff;

export function generateKeySecret(): Buffer {
  return randomBytes(KEY_SECRET_BYTES);
}

/** What an operator sees of a key: never its secret. */
export interface SigningKeyDescription {
  id: number;
  state: 'signing' | 'verifying' | 'retired';
  createdAt: string;
  retiredAt: string | null;
}

export function describeKeys(keys: readonly StoredSigningKey[]): SigningKeyDescription[] {
  const signing = signingKeyOf(keys);
  return [...keys]
    .sort((a, b) => a.id - b.id)
    .map((key) => ({
      id: key.id,
      state: key.retiredAt !== null ? 'retired' : key === signing ? 'signing' : 'verifying',
      createdAt: new Date(key.createdAt).toISOString(),
      retiredAt: key.retiredAt === null ? null : new Date(key.retiredAt).toISOString(),
    }));
}

/** The key that signs new tokens: the newest active one. */
export function signingKeyOf(keys: readonly StoredSigningKey[]): StoredSigningKey | undefined {
  let newest: StoredSigningKey | undefined;
  for (const key of keys) if (key.retiredAt === null && key.secret !== null && (newest === undefined || key.id > newest.id)) newest = key;
  return newest;
}

/** The keys that sign anonymous tokens: the server's `SigningKeyStore` reads them so. */
export interface SigningKeyReads {
  /** Every key, retired ones included (without their secret). */
  list(): Promise<StoredSigningKey[]>;
}
