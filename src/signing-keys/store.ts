import type { SigningKeyReads, StoredSigningKey } from 'tessera-tokens/internal/signing-keys/key.js';

/** The signing keys' storage seam; one SQL implementation over both dialects (`src/store/sql/signing-keys.ts`). */
export interface SigningKeyStore extends SigningKeyReads {
  /** Adds a key with the next id, which signs from now on; returns it. */
  add(secret: Buffer, at: number): Promise<StoredSigningKey>;
  /** Retires an active key and erases its secret; the key as it now is, or undefined if there is no such active key. */
  retire(id: number, at: number): Promise<StoredSigningKey | undefined>;
}
