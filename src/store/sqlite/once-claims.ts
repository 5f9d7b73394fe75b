import { OnceClaimedError, type OnceClaim, type OnceClaimStore } from '../../once.js';
import type { SqliteDatabase } from './connection.js';

/** Claims a once value inside the caller's transaction; throws `OnceClaimedError` if it was claimed before. */
export type SqliteOnceClaim = (once: OnceClaim | undefined) => void;

export function sqliteOnceClaims(db: SqliteDatabase): { claim: SqliteOnceClaim; store: OnceClaimStore } {
  const insert = db.prepare('INSERT INTO once_claims (value, keep_until) VALUES (:value, :keepUntil) ON CONFLICT (value) DO NOTHING');
  const deleteExpired = db.prepare('DELETE FROM once_claims WHERE value IN (SELECT value FROM once_claims WHERE keep_until <= :now LIMIT :batch)');
  return {
    claim(once) {
      if (once !== undefined && insert.run({ ...once }).changes === 0) throw new OnceClaimedError();
    },
    store: {
      async deleteExpired(now, batch) {
        return deleteExpired.run({ now, batch }).changes;
      },
    },
  };
}
