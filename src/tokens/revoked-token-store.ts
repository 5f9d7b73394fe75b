import type { RevocationReads, RevokedToken } from 'tessera-tokens/internal/tokens/revoked-tokens.js';

/** The revoked anonymous tokens' storage seam; one SQL implementation over both dialects (`src/store/sql/revoked-tokens.ts`). */
export interface RevokedTokenStore extends RevocationReads {
  /** Writes the revocation, durable when it resolves: true, or undefined (nothing written) if the token was revoked already. */
  add(revocation: RevokedToken): Promise<true | undefined>;
  /** Removes up to `batch` revocations of tokens that expired before `now` (housekeeping); returns how many. */
  deleteExpired(now: number, batch: number): Promise<number>;
}
