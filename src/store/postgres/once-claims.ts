import type pg from 'pg';
import { OnceClaimedError, type OnceClaim, type OnceClaimStore } from '../../once.js';
import type { PostgresQueries } from './connection.js';

/** Claims a once value inside the caller's transaction; throws `OnceClaimedError` if it was claimed before. */
export async function claimOnce(client: pg.PoolClient, once: OnceClaim | undefined): Promise<void> {
  if (once === undefined) return;
  // A second claim of a value waits for the first one's transaction, and inserts nothing if it committed.
  const inserted = await client.query('INSERT INTO once_claims (value, keep_until) VALUES ($1, $2) ON CONFLICT (value) DO NOTHING', [once.value, once.keepUntil]);
  if ((inserted.rowCount ?? 0) === 0) throw new OnceClaimedError();
}

export function postgresOnceClaimStore(db: PostgresQueries): OnceClaimStore {
  return {
    async deleteExpired(now, batch) {
      const result = await db.query({
        text: 'DELETE FROM once_claims WHERE value IN (SELECT value FROM once_claims WHERE keep_until <= $1 LIMIT $2)',
        values: [now, batch],
      });
      return result.rowCount ?? 0;
    },
  };
}
