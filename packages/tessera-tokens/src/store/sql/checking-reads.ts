import type { CheckingStore } from '../checking.js';
import { appReads } from './app-reads.js';
import { listJwtKeys } from './jwt-key-reads.js';
import { revocationsSince } from './revoked-token-reads.js';
import type { SqlRunner } from './runner.js';
import { listSigningKeys } from './signing-key-reads.js';
import { tokenReads } from './token-reads.js';

/** The reads of `CheckingStore`: the statements the server's store reads with (the `*-reads.ts` beside this). */
export function checkingReads(sql: SqlRunner): Omit<CheckingStore, 'onChange'> {
  return {
    apps: appReads(sql),
    tokens: tokenReads(sql),
    signingKeys: { list: () => listSigningKeys(sql) },
    jwtKeys: { listJwtKeys: () => listJwtKeys(sql) },
    revokedTokens: { since: (seq, limit) => revocationsSince(sql, seq, limit) },
  };
}
