import type { DeveloperSessionStore } from '../../developers/store.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

interface SessionRow {
  id: string;
  secret_hash: Buffer;
  developer_id: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

const COLUMNS = 'id, secret_hash, developer_id, created_at, last_seen_at, expires_at';

export function sqlDeveloperSessionStore(db: SqlRunner): DeveloperSessionStore {
  return {
    async insert(session) {
      const inserted = await db.run(
        `INSERT INTO developer_sessions (${COLUMNS})
         SELECT :id, :secretHash, :developerId, :createdAt, :lastSeenAt, :expiresAt
         WHERE EXISTS (SELECT 1 FROM developers WHERE id = :developerId AND disabled_at IS NULL)`,
        { ...session },
      );
      return inserted === 0 ? undefined : true;
    },
    async findById(id) {
      const row = await db.get<SessionRow>(`SELECT ${COLUMNS} FROM developer_sessions WHERE id = :id`, { id });
      if (row === undefined) return undefined;
      return {
        id: row.id,
        secretHash: Buffer.from(row.secret_hash),
        developerId: row.developer_id,
        createdAt: row.created_at,
        lastSeenAt: row.last_seen_at,
        expiresAt: row.expires_at,
      };
    },
    async touch(id, lastSeenAt, expiresAt) {
      await db.run('UPDATE developer_sessions SET last_seen_at = :lastSeenAt, expires_at = :expiresAt WHERE id = :id', {
        id,
        lastSeenAt,
        expiresAt,
      });
    },
    async delete(id) {
      return (await db.run('DELETE FROM developer_sessions WHERE id = :id', { id })) === 0 ? undefined : true;
    },
    async countOf(developerId, now) {
      const row = await db.get<{ n: number }>(
        'SELECT count(*) AS n FROM developer_sessions WHERE developer_id = :developerId AND expires_at > :now',
        {
          developerId,
          now,
        },
      );
      return row!.n;
    },
    async deleteExpired(now, batch) {
      return db.run(
        'DELETE FROM developer_sessions WHERE id IN (SELECT id FROM developer_sessions WHERE expires_at <= :now LIMIT :batch)',
        {
          now,
          batch,
        },
      );
    },
  };
}
