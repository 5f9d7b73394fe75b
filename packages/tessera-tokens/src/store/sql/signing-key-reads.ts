import type { StoredSigningKey } from '../../signing-keys/key.js';
import type { SqlRunner } from './runner.js';

// How the signing keys are read: by the server's key store (./signing-keys.ts) and by what
// checking reads (./checking-reads.ts).

export interface KeyRow {
  id: number;
  secret: Buffer | null;
  created_at: number;
  retired_at: number | null;
}

export const SIGNING_KEY_COLUMNS = 'id, secret, created_at, retired_at';

/** Every key, retired ones included (without their secret), by id. */
export async function listSigningKeys(db: SqlRunner): Promise<StoredSigningKey[]> {
  return (await db.all<KeyRow>(`SELECT ${SIGNING_KEY_COLUMNS} FROM keys ORDER BY id`)).map(toKey);
}

export function toKey(row: KeyRow): StoredSigningKey {
  return {
    id: row.id,
    secret: row.secret === null ? null : Buffer.from(row.secret),
    createdAt: row.created_at,
    retiredAt: row.retired_at,
  };
}
