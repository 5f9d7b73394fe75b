import type { AuditOf } from '../events/event.js';
import type { PrincipalKind } from '../principal.js';
import type { RevocationKind } from './revocation.js';

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
  /**
   * Removes every token of an app, or every one of a kind, and writes the events `audit` builds of
   * how many, in one transaction; returns how many. If the events cannot be written, nothing is removed.
   */
  deleteByApp(appId: string, kind: RevocationKind, audit: AuditOf<number>): Promise<number>;
  /**
   * Removes up to `batch` tokens that expired before `now` (housekeeping); returns how many. Other
   * instances are not told: a token that has expired is refused without its record.
   */
  deleteExpired(now: number, batch: number): Promise<number>;
}
