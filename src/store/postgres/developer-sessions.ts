import type { DeveloperSessionStore } from '../../developers/store.js';
import type { PostgresQueries } from './connection.js';
import { writeAccountAudit } from './developers.js';

interface SessionRow {
  id: string;
  secret_hash: Buffer;
  developer_id: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

export function postgresDeveloperSessionStore(db: PostgresQueries): DeveloperSessionStore {
  return {
    async insert(session, events) {
      return db.transaction(async (client) => {
        const result = await client.query({
          name: 'tessera-insert-session',
          text: `INSERT INTO developer_sessions (id, secret_hash, developer_id, created_at, last_seen_at, expires_at)
                 SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM developers WHERE id = $3 AND disabled_at IS NULL)`,
          values: [session.id, session.secretHash, session.developerId, session.createdAt, session.lastSeenAt, session.expiresAt],
        });
        if ((result.rowCount ?? 0) === 0) return undefined;
        await writeAccountAudit(client, events());
        return true as const;
      });
    },
    async findById(id) {
      const result = await db.query<SessionRow>({ name: 'tessera-find-session', text: 'SELECT * FROM developer_sessions WHERE id = $1', values: [id] });
      const row = result.rows[0];
      if (row === undefined) return undefined;
      return {
        id: row.id,
        secretHash: row.secret_hash,
        developerId: row.developer_id,
        createdAt: Number(row.created_at),
        lastSeenAt: Number(row.last_seen_at),
        expiresAt: Number(row.expires_at),
      };
    },
    async touch(id, lastSeenAt, expiresAt) {
      await db.query({
        name: 'tessera-touch-session',
        text: 'UPDATE developer_sessions SET last_seen_at = $2, expires_at = $3 WHERE id = $1',
        values: [id, lastSeenAt, expiresAt],
      });
    },
    async delete(id, events) {
      return db.transaction(async (client) => {
        const result = await client.query('DELETE FROM developer_sessions WHERE id = $1', [id]);
        if ((result.rowCount ?? 0) === 0) return false;
        await writeAccountAudit(client, events());
        return true;
      });
    },
    async countOf(developerId, now) {
      const result = await db.query<{ n: string }>({
        text: 'SELECT count(*) AS n FROM developer_sessions WHERE developer_id = $1 AND expires_at > $2',
        values: [developerId, now],
      });
      return Number(result.rows[0]?.n ?? 0);
    },
    async deleteExpired(now, batch) {
      const result = await db.query({
        text: 'DELETE FROM developer_sessions WHERE id IN (SELECT id FROM developer_sessions WHERE expires_at <= $1 LIMIT $2)',
        values: [now, batch],
      });
      return result.rowCount ?? 0;
    },
  };
}
