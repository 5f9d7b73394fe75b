import type { CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';

/** A credential revoked, and how many of its tokens went with it. */
export interface RevokedCredentialRecord {
  clientId: string;
  name: string;
  /** The credential whose admin token made it, when it was revoked with that one; null for the one named. */
  madeBy: string | null;
  tokensRevoked: number;
}

/** The end a previous secret had, when `endPreviousSecret` found the credential (or app: `AppStore.endPreviousSecret`). */
export interface EndedPreviousSecret {
  /** UNIX ms: when the previous secret would have stopped; null when none was working (nothing written). */
  validUntil: number | null;
}

/**
 * The credentials' storage seam; one SQL implementation over both dialects (`src/store/sql/credentials.ts`).
 * Credentials are read with their app (`AppRecord.credentials`), so that a cached app has them, and a
 * change to one reaches every instance with the app's change signal. Its methods take and give plain
 * records, undefined when nothing was written; a change and its audit events are put together by
 * `CredentialService` in one transaction (`Store.transaction`), which locks the app first
 * (`AppStore.lock`) where it counts the app's credentials.
 */
export interface CredentialStore {
  /** How many credentials the app has. */
  countOf(appId: string): Promise<number>;
  /** Inserts the credential. */
  insert(credential: CredentialRecord): Promise<void>;
  /**
   * Replaces the secret's hash; the replaced one becomes the previous secret until
   * `previousSecretValidUntil` (null: it stops at once, and any previous one with it). Takes admin
   * authority away first (tokens issued against the old secret are not stored). True, or
   * undefined (nothing written) if the app has no such credential.
   */
  rotate(appId: string, clientId: string, secretHash: Buffer, previousSecretValidUntil: number | null): Promise<true | undefined>;
  /**
   * Deletes the credential, every credential its admin tokens made (and those theirs made, and so
   * on), and every token issued from any of them; returns what was revoked, the named credential
   * first, or undefined (nothing written) if the app has no such credential.
   */
  delete(appId: string, clientId: string): Promise<RevokedCredentialRecord[] | undefined>;
  /**
   * Ends the credential's previous secret if it still works at `now`: the end it had, or
   * `validUntil` null (nothing written) when none works; undefined when the app has no such
   * credential. As `AppStore.endPreviousSecret`.
   */
  endPreviousSecret(appId: string, clientId: string, now: number): Promise<EndedPreviousSecret | undefined>;
  /** Sets when the credential was last used to `at`, unless that was written less than `minIntervalMs` before. */
  markUsed(clientId: string, at: number, minIntervalMs: number): Promise<void>;
}
