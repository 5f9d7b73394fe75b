import type { PrincipalKind } from '../principal.js';

/** A token as stored: only its digest, never the token. */
export interface TokenRecord {
  tokenHash: Buffer;
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
  findByHash(tokenHash: Buffer): Promise<TokenRecord | undefined>;
}
