import { generateKeySecret, type StoredKey } from '../../keys/key.js';
import type { KeyStore } from '../../keys/store.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';

interface KeyRow {
  id: number;
  secret: Buffer | null;
  created_at: number;
  retired_at: number | null;
}

export function sqliteKeyStore(db: SqliteDatabase): KeyStore {
  const statements = {
    listKeys: db.prepare('SELECT * FROM keys ORDER BY id'),
    insertKey: db.prepare('INSERT INTO keys (secret, created_at) VALUES (:secret, :createdAt) RETURNING *'),
    retireKey: db.prepare(
      'UPDATE keys SET secret = NULL, retired_at = :at WHERE id = :id AND retired_at IS NULL RETURNING *',
    ),
  };
  return {
    async list() {
      return (statements.listKeys.all() as KeyRow[]).map(toKey);
    },
    async add(secret, at) {
      return toKey(statements.insertKey.get({ secret, createdAt: at }) as KeyRow);
    },
    async retire(id, at) {
      const row = statements.retireKey.get({ id, at }) as KeyRow | undefined;
      return row === undefined ? undefined : toKey(row);
    },
  };
}

/** The first key, made with the store: one transaction, so that processes opening a new file together make one. */
export function createFirstKey(db: SqliteDatabase, now: number): void {
  immediateTransaction(db, () => {
    if (db.prepare('SELECT 1 AS found FROM keys LIMIT 1').get() !== undefined) return;
    db.prepare('INSERT INTO keys (secret, created_at) VALUES (:secret, :createdAt)').run({ secret: generateKeySecret(), createdAt: now });
  })();
}

function toKey(row: KeyRow): StoredKey {
  return {
    id: row.id,
    secret: row.secret === null ? null : Buffer.from(row.secret),
    createdAt: row.created_at,
    retiredAt: row.retired_at,
  };
}
