import type { PrincipalKind } from '../principal.js';

/** A token as stored: its selector and the hash of its verifier, never the token (see `token.ts`). */
export interface TokenRecord {
  selector: Buffer;
  verifierHash: Buffer;
  appId: string;
  kind: PrincipalKind;
  /** UNIX ms. */
  issuedAt: number;
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
}

/** The tokens' storage seam; one implementation per backend under `src/store/`. */
export interface TokenStore {
  /** Resolves once the token is durable: a 200 is never answered for a token a crash could lose. */
  insert(token: TokenRecord): Promise<void>;
  findBySelector(selector: Buffer): Promise<TokenRecord | undefined>;
  /** Removes one token; false if there was none. */
  delete(selector: Buffer): Promise<boolean>;
  /** Removes every token of an app, or every one of a kind; returns how many. */
  deleteByApp(appId: string, kind?: PrincipalKind): Promise<number>;
  /**
   * Removes up to `batch` tokens that expired before `now` (housekeeping); returns how many. Other
   * instances are not told: a token that has expired is refused without its record.
   */
  deleteExpired(now: number, batch: number): Promise<number>;
}
