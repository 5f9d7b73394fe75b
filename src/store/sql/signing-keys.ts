import { andThen, type MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import { generateKeySecret } from 'tessera-tokens/internal/signing-keys/key.js';
import type { SigningKeyStore } from '../../signing-keys/store.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';
import { listSigningKeys, SIGNING_KEY_COLUMNS, toKey, type KeyRow } from 'tessera-tokens/internal/store/sql/signing-key-reads.js';

export function sqlSigningKeyStore(db: SqlRunner): SigningKeyStore {
  return {
    list: () => listSigningKeys(db),
    async add(secret, at) {
      return db.transaction(async (tx) => {
        // Operators rotating at the same moment take turns (SQLite's transactions always do), so
        // that each key gets the next id.
        if (tx.dialect === 'postgres') await tx.run('LOCK TABLE keys IN SHARE ROW EXCLUSIVE MODE');
        const row = await tx.get<KeyRow>(
          `INSERT INTO keys (id, secret, created_at) SELECT COALESCE(max(id), 0) + 1, :secret, :at FROM keys RETURNING ${SIGNING_KEY_COLUMNS}`,
          { secret, at },
        );
        return toKey(row!);
      });
    },
    async retire(id, at) {
      const row = await db.get<KeyRow>(
        `UPDATE keys SET secret = NULL, retired_at = :at WHERE id = :id AND retired_at IS NULL RETURNING ${SIGNING_KEY_COLUMNS}`,
        { id, at },
      );
      return row === undefined ? undefined : toKey(row);
    },
  };
}

/**
 * The first key, made with the store. Read first, so that a role that may only read (another
 * service's `TesseraVerifier` on PostgreSQL) opens a store that has its key; processes opening a new
 * store together make one key between them. Synchronous on SQLite, which opens its store so.
 */
export function createFirstKey(db: SqlRunner, now: number): MaybePromise<unknown> {
  return andThen(db.get('SELECT 1 AS found FROM keys LIMIT 1'), (found) =>
    found === undefined
      ? db.run('INSERT INTO keys (id, secret, created_at) VALUES (1, :secret, :now) ON CONFLICT (id) DO NOTHING', {
          secret: generateKeySecret(),
          now,
        })
      : undefined,
  );
}
