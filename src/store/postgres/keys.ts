import { generateKeySecret, type StoredKey } from '../../keys/key.js';
import type { KeyStore } from '../../keys/store.js';
import type { PostgresQueries } from './connection.js';

interface KeyRow {
  id: number;
  secret: Buffer | null;
  created_at: string;
  retired_at: string | null;
}

export function postgresKeyStore(db: PostgresQueries): KeyStore {
  return {
    async list() {
      const result = await db.query<KeyRow>({ name: 'tessera-list-keys', text: 'SELECT * FROM keys ORDER BY id' });
      return result.rows.map(toKey);
    },
    async add(secret, at) {
      return db.transaction(async (client) => {
        // Operators rotating at the same moment take turns, so that each key gets the next id.
        await client.query('LOCK TABLE keys IN SHARE ROW EXCLUSIVE MODE');
        const result = await client.query<KeyRow>(
          'INSERT INTO keys (id, secret, created_at) SELECT COALESCE(max(id), 0) + 1, $1, $2 FROM keys RETURNING *',
          [secret, at],
        );
        return toKey(result.rows[0]!);
      });
    },
    async retire(id, at) {
      const result = await db.query<KeyRow>({
        text: 'UPDATE keys SET secret = NULL, retired_at = $2 WHERE id = $1 AND retired_at IS NULL RETURNING *',
        values: [id, at],
      });
      const row = result.rows[0];
      return row === undefined ? undefined : toKey(row);
    },
  };
}

/**
 * The first key, made with the store. Read first, so that a role that may only read (another
 * service's `TesseraVerifier`) opens a store that has its key; instances starting together on a new
 * database make one key between them.
 */
export async function createFirstKey(db: PostgresQueries, now: number): Promise<void> {
  const existing = await db.query({ text: 'SELECT 1 FROM keys LIMIT 1' });
  if ((existing.rowCount ?? 0) > 0) return;
  await db.query({
    text: 'INSERT INTO keys (id, secret, created_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING',
    values: [generateKeySecret(), now],
  });
}

function toKey(row: KeyRow): StoredKey {
  return {
    id: row.id,
    secret: row.secret,
    createdAt: Number(row.created_at),
    retiredAt: row.retired_at === null ? null : Number(row.retired_at),
  };
}
