import type { SessionRecord } from '../../developers/session.js';
import type { DeveloperSessionStore } from '../../developers/store.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';
import type { SqliteAccountAuditWrites } from './developers.js';

interface SessionRow {
  id: string;
  secret_hash: Buffer;
  developer_id: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

export function sqliteDeveloperSessionStore(db: SqliteDatabase, audit: SqliteAccountAuditWrites): DeveloperSessionStore {
  const statements = {
    insert: db.prepare(
      `INSERT INTO developer_sessions (id, secret_hash, developer_id, created_at, last_seen_at, expires_at)
       SELECT :id, :secretHash, :developerId, :createdAt, :lastSeenAt, :expiresAt
       WHERE EXISTS (SELECT 1 FROM developers WHERE id = :developerId AND disabled_at IS NULL)`,
    ),
    findById: db.prepare('SELECT * FROM developer_sessions WHERE id = :id'),
    touch: db.prepare('UPDATE developer_sessions SET last_seen_at = :lastSeenAt, expires_at = :expiresAt WHERE id = :id'),
    delete: db.prepare('DELETE FROM developer_sessions WHERE id = :id'),
    countOf: db.prepare('SELECT count(*) AS n FROM developer_sessions WHERE developer_id = :developerId AND expires_at > :now'),
    deleteExpired: db.prepare('DELETE FROM developer_sessions WHERE id IN (SELECT id FROM developer_sessions WHERE expires_at <= :now LIMIT :batch)'),
  };
  const insert = immediateTransaction(db, (session: SessionRecord, events: Parameters<SqliteAccountAuditWrites>[0]): true | undefined => {
    if (statements.insert.run({ ...session }).changes === 0) return undefined;
    audit(events);
    return true;
  });
  const remove = immediateTransaction(db, (id: string, events: Parameters<SqliteAccountAuditWrites>[0]): boolean => {
    if (statements.delete.run({ id }).changes === 0) return false;
    audit(events);
    return true;
  });
  return {
    async insert(session, events) {
      return insert(session, events());
    },
    async findById(id) {
      const row = statements.findById.get({ id }) as SessionRow | undefined;
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
      statements.touch.run({ id, lastSeenAt, expiresAt });
    },
    async delete(id, events) {
      return remove(id, events());
    },
    async countOf(developerId, now) {
      return (statements.countOf.get({ developerId, now }) as { n: number }).n;
    },
    async deleteExpired(now, batch) {
      return statements.deleteExpired.run({ now, batch }).changes;
    },
  };
}
