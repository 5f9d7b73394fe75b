import type { CheckingStore } from '../checking.js';
import { appReads } from './apps.js';
import { sqlSigningKeyStore } from './signing-keys.js';
import { sqlRevokedTokenStore } from './revoked-tokens.js';
import type { SqlRunner } from './runner.js';
import { tokenReads } from './tokens.js';

/** The reads of `CheckingStore`, the same statements the server's store reads with. */
export function checkingReads(sql: SqlRunner): Omit<CheckingStore, 'onChange'> {
  const signingKeys = sqlSigningKeyStore(sql);
  const revokedTokens = sqlRevokedTokenStore(sql);
  return {
    apps: appReads(sql),
    tokens: tokenReads(sql),
    signingKeys: { list: () => signingKeys.list() },
    revokedTokens: { since: (seq, limit) => revokedTokens.since(seq, limit) },
  };
}
