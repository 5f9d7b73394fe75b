import type { StoredKey } from './key.js';

/** The signing keys' storage seam; one SQL implementation over both dialects (`src/store/sql/keys.ts`). */
export interface KeyStore {
  /** Every key, retired ones included (without their secret). */
  list(): Promise<StoredKey[]>;
  /** Adds a key with the next id, which signs from now on; returns it. */
  add(secret: Buffer, at: number): Promise<StoredKey>;
  /** Retires an active key and erases its secret; the key as it now is, or undefined if there is no such active key. */
  retire(id: number, at: number): Promise<StoredKey | undefined>;
}
