import { andThen, type MaybePromise } from '../../maybe-promise.js';
import { generateKeySecret, type StoredSigningKey } from '../../signing-keys/key.js';
import type { SigningKeyStore } from '../../signing-keys/store.js';
import type { SqlRunner } from './runner.js';

interface KeyRow {
  id: number;
  secret: Buffer | null;
  created_at: number;
  retired_at: number | null;
}

const COLUMNS = 'id, secret, created_at, retired_at';

export function sqlSigningKeyStore(db: SqlRunner): SigningKeyStore {
  return {
    async list() {
      return (await db.all<KeyRow>(`SELECT ${COLUMNS} FROM keys ORDER BY id`)).map(toKey);
    },
    async add(secret, at) {
      return db.transaction(async (tx) => {
        // Operators rotating at the same moment take turns (SQLite's transactions always do), so
        // that each key gets the next id.
        if (tx.dialect === 'postgres') await tx.run('LOCK TABLE keys IN SHARE ROW EXCLUSIVE MODE');
        const row = await tx.get<KeyRow>(
          `INSERT INTO keys (id, secret, created_at) SELECT COALESCE(max(id), 0) + 1, :secret, :at FROM keys RETURNING ${COLUMNS}`,
          { secret, at },
        );
        return toKey(row!);
      });
    },
    async retire(id, at) {
      const row = await db.get<KeyRow>(
        `UPDATE keys SET secret = NULL, retired_at = :at WHERE id = :id AND retired_at IS NULL RETURNING ${COLUMNS}`,
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

function toKey(row: KeyRow): StoredSigningKey {
  return {
    id: row.id,
    secret: row.secret === null ? null : Buffer.from(row.secret),
    createdAt: row.created_at,
    retiredAt: row.retired_at,
  };
}
