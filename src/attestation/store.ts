/** Serials in a block of `pow_serial_blocks`: its bits take 512 bytes. */
export const SERIALS_PER_BLOCK = 4096;

/** A debug token of an app (`debug-tokens.ts`): the token itself is shown once and kept only as its SHA-256. */
export interface DebugTokenRecord {
  id: string;
  appId: string;
  name: string;
  tokenHash: Buffer;
  /** UNIX ms. */
  createdAt: number;
  /** UNIX ms, written at most once a minute; null if never used. */
  lastUsedAt: number | null;
}

/** The attestation's storage seam: the apps' debug tokens, and the proofs of work accepted. */
export interface AttestationStore {
  insertDebugToken(record: DebugTokenRecord): Promise<void>;
  /** The app's debug tokens, oldest first. */
  debugTokensOf(appId: string): Promise<DebugTokenRecord[]>;
  countDebugTokens(appId: string): Promise<number>;
  findDebugToken(appId: string, tokenHash: Buffer): Promise<DebugTokenRecord | undefined>;
  /** Deletes it: the record it was, or undefined if the app has no such token. */
  deleteDebugToken(appId: string, id: string): Promise<DebugTokenRecord | undefined>;
  /** Sets when it was last used, if that was more than a minute before `at`. */
  touchDebugToken(id: string, at: number): Promise<void>;
  /**
   * Claims a proof accepted (`replayClaim`): true, or undefined (nothing written) if it was claimed
   * before, on this instance or another. The store's own claims are group-committed.
   */
  claim(claim: Buffer): Promise<true | undefined>;
  /** Removes up to `batch` claims whose expiry is `now` or earlier; how many it removed. */
  deleteExpiredClaims(now: number, batch: number): Promise<number>;
  /**
   * Reserves a block of `SERIALS_PER_BLOCK` serials for the challenges one instance makes, every one
   * of which expires by `expiresAt`: its id, never given before (serials `id * SERIALS_PER_BLOCK` on).
   */
  reserveSerials(expiresAt: number): Promise<number>;
  /**
   * Claims a proof accepted by its challenge's serial: true, or undefined (nothing written) if it was
   * claimed before, on this instance or another, or its block is gone (expired). Group-committed.
   */
  claimSerial(serial: number): Promise<true | undefined>;
  /** Removes up to `batch` blocks of serials whose expiry is `now` or earlier; how many it removed. */
  deleteExpiredSerials(now: number, batch: number): Promise<number>;
  /** A provider's settings for the app (JSON as stored), or undefined. */
  findSettings(appId: string, provider: string): Promise<ProviderSettingsRecord | undefined>;
  /** Sets them (replacing what was there). */
  putSettings(record: ProviderSettingsRecord): Promise<void>;
  /** Removes them: true, or undefined if there were none. */
  deleteSettings(appId: string, provider: string): Promise<true | undefined>;
  /** An App Attest key of the app: its public key (uncompressed point) and the last counter seen. */
  findKey(appId: string, keyId: Buffer): Promise<{ publicKey: Buffer; counter: number } | undefined>;
  /** Keeps a key just attested, counter 0: true, or undefined (nothing written) if it was attested before. */
  insertKey(appId: string, keyId: Buffer, publicKey: Buffer, at: number): Promise<true | undefined>;
  /** Raises the key's counter to `counter` if it is below it (on every instance at once): true, or undefined if it was not. */
  advanceCounter(appId: string, keyId: Buffer, counter: number): Promise<true | undefined>;
}

/** What a platform's attestation of an app is checked against, as stored. */
export interface ProviderSettingsRecord {
  appId: string;
  provider: string;
  /** JSON of the provider's settings (`android.ts`: `PlayIntegritySettings`). */
  settings: string;
  /** UNIX ms. */
  updatedAt: number;
}

/**
 * What stands for a proof of work accepted, in the store: its expiry (8 bytes, big-endian UNIX ms),
 * then 128 bits of its challenge's signature (unique per challenge). Ordered by time, so that the
 * claims of a burst go to the last pages of the table, and the expired ones are a range.
 */
export function replayClaim(signatureHex: string, validUntil: number): Buffer {
  const claim = Buffer.allocUnsafe(24);
  claim.writeBigUInt64BE(BigInt(validUntil), 0);
  claim.write(signatureHex.slice(0, 32), 8, 'hex');
  return claim;
}

/** The smallest claim of an expiry after `now`: every claim below it has expired. */
export function claimsExpiredBy(now: number): Buffer {
  const bound = Buffer.alloc(8);
  bound.writeBigUInt64BE(BigInt(now + 1), 0);
  return bound;
}
