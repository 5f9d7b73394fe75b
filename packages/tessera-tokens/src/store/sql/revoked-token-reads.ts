import type { StoredRevocation } from '../../tokens/revoked-tokens.js';
import type { SqlRunner } from './runner.js';

// How the revoked anonymous tokens are read: by the server's store of them (./revoked-tokens.ts)
// and by what checking reads (./checking-reads.ts).

interface RevocationRow {
  seq: number;
  token_id: Buffer;
  app_id: string;
  expires_at: number | null;
}

/** Removes the app's single revocations, in the caller's transaction. */

/** Revocations written after `seq`, oldest first, at most `limit`. */
export async function revocationsSince(db: SqlRunner, seq: number, limit: number): Promise<StoredRevocation[]> {
  const rows = await db.all<RevocationRow>(
    'SELECT seq, token_id, app_id, expires_at FROM revoked_tokens WHERE seq > :seq ORDER BY seq LIMIT :limit',
    {
      seq,
      limit,
    },
  );
  return rows.map(toRevocation);
}

function toRevocation(row: RevocationRow): StoredRevocation {
  return { seq: row.seq, id: Buffer.from(row.token_id).toString('latin1'), appId: row.app_id, expiresAt: row.expires_at };
}
