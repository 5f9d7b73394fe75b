import type { TokenReads, TokenRecord } from 'tessera-tokens/internal/tokens/token-record.js';
import type { RevocationKind } from '../apps/revoke-all.js';

/**
 * The tokens' storage seam; one SQL implementation over both dialects (`src/store/sql/tokens.ts`).
 * Bound to a transaction (`Store.transaction`), `insert` is one statement of it, without group commit.
 */
export type { TokenRecord } from 'tessera-tokens/internal/tokens/token-record.js';

export interface TokenStore extends TokenReads {
  /**
   * Stores the token if its app's admin generation is still `adminGeneration`, the one of the app
   * record its request was authenticated against (`AppRecord.adminGeneration`): true, or undefined
   * (nothing stored) if a rotation or revocation changed it meanwhile, or the app is gone. Resolves once the
   * token is durable: a 200 is never answered for a token a crash could lose.
   */
  insert(token: TokenRecord, adminGeneration: number): Promise<true | undefined>;
  /** Removes one token: true, or undefined (nothing written) if there was none. */
  delete(selector: Buffer): Promise<true | undefined>;
  /**
   * Revokes every token of an app, or every one of a kind: unless only anonymous ones are revoked,
   * takes admin authority away first (`withdrawAdminGrants`: a token insert racing it stores
   * nothing), removes the stored ones and, unless only admin tokens are revoked, sets the app's
   * anonymous cut-off to `at` (which ends every self-verifying anonymous token issued until then)
   * and drops the app's single revocations, which the cut-off covers; returns how many stored
   * tokens were removed. In the transaction it is called in (`Store.transaction`, with its events),
   * or one of its own.
   */
  revokeAll(appId: string, kind: RevocationKind, at: number): Promise<number>;
  /** Removes the app's tokens, or those of one kind, without taking admin authority away (the caller did: a rotation); how many. */
  deleteOfApp(appId: string, kind: RevocationKind): Promise<number>;
  /**
   * Removes up to `batch` tokens that expired before `now` (housekeeping); returns how many. Other
   * instances are not told: a token that has expired is refused without its record.
   */
  deleteExpired(now: number, batch: number): Promise<number>;
}
