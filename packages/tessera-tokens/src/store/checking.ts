import type { AppReads } from '../apps/app-reads.js';
import type { JwtKeyReads } from '../jwt/keys.js';
import type { SigningKeyReads } from '../signing-keys/key.js';
import type { RevocationReads } from '../tokens/revoked-tokens.js';
import type { TokenReads } from '../tokens/token-record.js';

/**
 * What the store's change signal says may have changed: one app (its record, tokens or settings),
 * the revoked anonymous tokens only (new rows to read), or anything (keys, tokens, apps).
 */
export type StoreChange = { appId: string } | 'revocations' | 'anything';

/** PG_STALE_LIMIT_MS's default: how long caches are trusted after the last proof that changes are heard. */
export const DEFAULT_STALE_LIMIT_MS = 2_000;

/** Whether changes made by other processes are heard, for the metrics and `/readyz`. */
export interface ChangeSignal {
  /** PostgreSQL's LISTEN connection is up and hears its heartbeats; always true for SQLite's poller. */
  up: boolean;
  /** Why it is not up. */
  problem?: string;
  /**
   * UNIX ms until which what is cached is served without a new proof that every change is heard
   * (the last heartbeat heard plus PG_STALE_LIMIT_MS; after it, caches are emptied every 250 ms).
   */
  trustedUntil: number;
}

/**
 * What checking a request reads of the store (`createTokenChecking`), and the change signal that
 * keeps what it read fresh. The server's `Store` is one; another service's `TesseraVerifier` opens
 * only this (`openCheckingStore`), which never migrates nor writes.
 */
export interface CheckingStore {
  readonly apps: AppReads;
  readonly tokens: TokenReads;
  readonly signingKeys: SigningKeyReads;
  /** The keys of JWT access tokens: read when a JWT is first presented. */
  readonly jwtKeys: JwtKeyReads;
  readonly revokedTokens: RevocationReads;
  /**
   * Registers a listener called when something may have been changed by another process sharing the
   * store. It is called within one second of the change; caches drop what it names.
   */
  onChange(listener: (change: StoreChange) => void): void;
}

export interface OpenCheckingStore extends CheckingStore {
  close(): Promise<void>;
}
