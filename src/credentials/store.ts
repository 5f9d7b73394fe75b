import type { AuditOf } from '../events/event.js';
import type { OnceClaim } from '../once.js';
import type { CredentialRecord } from './credential.js';

/** A credential revoked, and how many of its tokens went with it. */
export interface RevokedCredentialRecord {
  clientId: string;
  name: string;
  /** The credential whose admin token made it, when it was revoked with that one; null for the one named. */
  madeBy: string | null;
  tokensRevoked: number;
}

/**
 * The credentials' storage seam; one SQL implementation over both dialects (`src/store/sql/credentials.ts`).
 * Credentials are read with their app (`AppRecord.credentials`), so that a cached app has them, and a
 * change to one reaches every instance with the app's change signal.
 */
export interface CredentialStore {
  /**
   * Inserts the credential and the events `audit` builds, in one transaction, unless its app has
   * `maxPerApp` credentials already (`limit`) or does not exist (`no app`): then nothing is written.
   * With `once`, only by claiming it: `OnceClaimedError` (and nothing written) if it was claimed before.
   */
  insert(credential: CredentialRecord, maxPerApp: number, audit: AuditOf<void>, once?: OnceClaim): Promise<'inserted' | 'limit' | 'no app'>;
  /**
   * Replaces the secret's hash; the replaced one becomes the previous secret until
   * `previousSecretValidUntil` (null: it stops at once, and any previous one with it). With the
   * events `audit` builds, in one transaction. False (nothing written) if the app has no such
   * credential. With `once`, as `insert`.
   */
  rotate(
    appId: string,
    clientId: string,
    secretHash: Buffer,
    previousSecretValidUntil: number | null,
    audit: AuditOf<void>,
    once?: OnceClaim,
  ): Promise<boolean>;
  /**
   * Deletes the credential, every credential its admin tokens made (and those theirs made, and so
   * on), and every token issued from any of them, and writes the events `audit` builds of what was
   * revoked, in one transaction; returns that, the named credential first, or undefined (nothing
   * written) if the app has no such credential. With `once`, as `insert`.
   */
  delete(
    appId: string,
    clientId: string,
    audit: AuditOf<RevokedCredentialRecord[]>,
    once?: OnceClaim,
  ): Promise<RevokedCredentialRecord[] | undefined>;
  /** As `AppStore.endPreviousSecret`, for the credential's previous secret; undefined when the app has no such credential. */
  endPreviousSecret(appId: string, clientId: string, now: number, audit: AuditOf<number>): Promise<number | null | undefined>;
  /** Sets when the credential was last used to `at`, unless that was written less than `minIntervalMs` before. */
  markUsed(clientId: string, at: number, minIntervalMs: number): Promise<void>;
}
