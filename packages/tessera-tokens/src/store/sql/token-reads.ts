import type { PrincipalKind } from '../../principal.js';
import type { TokenReads, TokenRecord } from '../../tokens/token-record.js';
import { andThen } from '../../maybe-promise.js';
import { BatchedReads } from '../batched-reads.js';
import type { SqlRunner } from './runner.js';

// How a stored token is read: by the server's token store (./tokens.ts) and by what checking reads
// (./checking-reads.ts).

export interface TokenRow {
  selector: Buffer;
  verifier_hash: Buffer;
  app_id: string;
  kind: PrincipalKind;
  issued_at: number;
  expires_at: number | null;
  client_id: string | null;
  scopes: string | null;
}

export const TOKEN_COLUMNS = 'selector, verifier_hash, app_id, kind, issued_at, expires_at, client_id, scopes';

/**
 * Reads a token at once on SQLite; on PostgreSQL, the reads asked for in one turn of the event loop
 * share one statement, unless `batchReads` is false (in a transaction, whose reads are its own).
 */
export function tokenReads(db: SqlRunner, { batchReads = true }: { batchReads?: boolean } = {}): TokenReads {
  const findOne = findOneOn(db);
  if (db.dialect !== 'postgres' || !batchReads) return { findBySelector: findOne };
  const batchedReads = new BatchedReads<Buffer, TokenRecord>({
    readMany: async (selectors) =>
      (await db.all<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE selector = ANY(:selectors)`, { selectors })).map(toToken),
    keyOf: (selector) => selector.toString('latin1'),
    keyOfValue: (token) => token.selector.toString('latin1'),
  });
  return { findBySelector: (selector) => batchedReads.read(selector) };
}

const findOneOn = (db: SqlRunner) => (selector: Buffer) =>
  andThen(db.get<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE selector = :selector`, { selector }), (row) => row && toToken(row));

function toToken(row: TokenRow): TokenRecord {
  return {
    selector: Buffer.from(row.selector),
    verifierHash: Buffer.from(row.verifier_hash),
    appId: row.app_id,
    kind: row.kind,
    issuedAt: row.issued_at,
    expiresAt: row.expires_at,
    clientId: row.client_id,
    scopes: row.scopes === null ? null : Object.freeze(row.scopes.split(' ')),
  };
}
