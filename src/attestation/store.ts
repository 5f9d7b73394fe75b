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

/** The attestation's storage seam: the apps' debug tokens. */
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
}
