import type { RevokedTokenStore, StoredRevocation } from '../../tokens/revoked-tokens.js';
import type { SqliteDatabase } from './connection.js';

interface RevocationRow {
  seq: number;
  token_id: Buffer;
  app_id: string;
  expires_at: number | null;
}

export function sqliteRevokedTokenStore(db: SqliteDatabase): RevokedTokenStore {
  const statements = {
    insertRevocation: db.prepare(
      `INSERT INTO revoked_tokens (token_id, app_id, expires_at) VALUES (:tokenId, :appId, :expiresAt)
       ON CONFLICT (token_id) DO NOTHING`,
    ),
    listSince: db.prepare('SELECT * FROM revoked_tokens WHERE seq > :seq ORDER BY seq LIMIT :limit'),
    deleteExpired: db.prepare(
      `DELETE FROM revoked_tokens WHERE seq IN
         (SELECT seq FROM revoked_tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch)`,
    ),
  };
  return {
    async add({ id, appId, expiresAt }) {
      return statements.insertRevocation.run({ tokenId: Buffer.from(id, 'latin1'), appId, expiresAt }).changes > 0;
    },
    async since(seq, limit) {
      return (statements.listSince.all({ seq, limit }) as RevocationRow[]).map(toRevocation);
    },
    async deleteExpired(now, batch) {
      return statements.deleteExpired.run({ now, batch }).changes;
    },
  };
}

function toRevocation(row: RevocationRow): StoredRevocation {
  return { seq: row.seq, id: Buffer.from(row.token_id).toString('latin1'), appId: row.app_id, expiresAt: row.expires_at };
}
