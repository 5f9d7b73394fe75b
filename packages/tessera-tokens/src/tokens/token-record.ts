import type { MaybePromise } from '../maybe-promise.js';
import type { PrincipalKind } from '../principal.js';

/** A stored token (admin tokens, and anonymous tokens issued before they were self-verifying): its selector and the hash of its verifier, never the token (see `token.ts`). */
export interface TokenRecord {
  selector: Buffer;
  verifierHash: Buffer;
  appId: string;
  kind: PrincipalKind;
  /** UNIX ms. */
  issuedAt: number;
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
  /** The ClientID of the credential it was issued from; null for the app's own ClientID, and anonymous tokens. */
  clientId: string | null;
  /** What it may do (a credential's scopes, or fewer); null: everything an admin may (the app's own ClientID), or anonymous. */
  scopes: readonly string[] | null;
  /** A JWT admin token's index in the status lists (written, not read back); absent or null for an opaque token. */
  statusIndex?: number | null;
}

/** A stored token by its selector: the server's `TokenStore` reads it so. */
export interface TokenReads {
  findBySelector(selector: Buffer): MaybePromise<TokenRecord | undefined>;
}
