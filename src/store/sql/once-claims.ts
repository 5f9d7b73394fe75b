import type { OnceClaim, OnceClaimStore } from '../../once-claims.js';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

/**
 * Claims a once value; 1 if it was not claimed before, 0 (nothing written) if it was. On PostgreSQL,
 * a second claim of a value waits for the first one's transaction, and inserts nothing if it
 * committed; SQLite's transactions take turns.
 */
function insertClaim(db: SqlRunner, once: OnceClaim): MaybePromise<number> {
  return db.run('INSERT INTO once_claims (value, keep_until) VALUES (:value, :keepUntil) ON CONFLICT (value) DO NOTHING', {
    value: once.value,
    keepUntil: once.keepUntil,
  });
}

export function sqlOnceClaimStore(db: SqlRunner): OnceClaimStore {
  return {
    async claim(once) {
      return (await insertClaim(db, once)) > 0 ? true : undefined;
    },
    async deleteExpired(now, batch) {
      return db.run('DELETE FROM once_claims WHERE value IN (SELECT value FROM once_claims WHERE keep_until <= :now LIMIT :batch)', {
        now,
        batch,
      });
    },
  };
}
