import type { JwtKeyReads, StoredJwtKey } from 'tessera-tokens/internal/jwt/keys.js';
import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';

/** The JWT keys' storage seam; one SQL implementation over both dialects (`src/store/sql/jwt.ts`). */
export interface JwtKeyStore extends JwtKeyReads {
  insertJwtKey(key: StoredJwtKey): Promise<void>;
  /**
   * Ends the publication of every key made before `kid` that is still published without an end: at
   * `publishedUntil`, when every token they may still sign (until `kid` signs) has expired.
   */
  supersede(kid: string, publishedUntil: number): Promise<void>;
  /** Erases the private keys of the keys that no longer sign (a key made after them signs since `now` or earlier). */
  erasePrivateKeys(now: number): Promise<number>;
  /** Ends a key's publication at once (an emergency): undefined if there is no such published key. */
  retireJwtKey(kid: string, at: number): Promise<true | undefined>;
  /** Deletes the keys no longer published. */
  deleteUnpublishedJwtKeys(now: number): Promise<number>;
}

/** A block of status list indexes reserved by an instance for the tokens of one app and kind. */
export interface StatusListBlock {
  firstIndex: number;
  size: number;
  appId: string;
  kind: PrincipalKind;
  /** UNIX ms. */
  reservedAt: number;
  /** UNIX ms by which every token given an index of it has expired. */
  expiresBy: number;
}

/** What one status list holds revoked: whole blocks, and single indexes. */
export interface StatusListContents {
  /** Blocks revoked whole: their app was deleted, or (anonymous) cut off by a revoke-all after they were reserved. */
  revokedBlocks: { firstIndex: number; size: number }[];
  revokedIndexes: number[];
  /** Whether any block of the list is still in use (a token of it may be valid). */
  inUse: boolean;
}

/** The Token Status Lists' storage seam (`src/store/sql/jwt.ts`). */
export interface StatusListStore {
  /** Reserves `size` indexes (a power of two: a block never spans two lists) for the app's tokens of a kind; the first. */
  reserveBlock(block: Omit<StatusListBlock, 'firstIndex'>): Promise<number>;
  /** Sets one token's bit (an anonymous JWT revoked by itself). */
  revokeIndex(index: number, expiresAt: number): Promise<void>;
  /** What the indexes from `from` to `to` (exclusive) hold revoked, at `now`. */
  contents(from: number, to: number, now: number): Promise<StatusListContents>;
  /** Deletes the blocks and revocations whose tokens have all expired. */
  deleteExpiredStatus(now: number, batch: number): Promise<number>;
}
