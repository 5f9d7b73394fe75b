import type { OneTimeLinkRecord } from '../../developers/one-time-link.js';
import type { OneTimeLinkStore } from '../../developers/store.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';
import type { SqliteAccountAuditWrites } from './developers.js';

interface LinkRow {
  id: string;
  secret_hash: Buffer;
  purpose: OneTimeLinkRecord['purpose'];
  developer_id: string | null;
  app_id: string | null;
  email: string | null;
  invited_by: string | null;
  created_at: number;
  expires_at: number;
}

/** The writes to the links table that the other tables' transactions make too. */
export interface SqliteLinkWrites {
  /** Inserts the link and removes the ones it replaces; false if its developer or app does not exist (or the developer is disabled). */
  insert(link: OneTimeLinkRecord): boolean;
  deletePasswordLinksOf(developerId: string): void;
}

export function prepareLinkWrites(db: SqliteDatabase): SqliteLinkWrites {
  const insert = db.prepare(
    `INSERT INTO one_time_links (id, secret_hash, purpose, developer_id, app_id, email, invited_by, created_at, expires_at)
     SELECT :id, :secretHash, :purpose, :developerId, :appId, :email, :invitedBy, :createdAt, :expiresAt
     WHERE CASE WHEN :developerId IS NULL THEN EXISTS (SELECT 1 FROM apps WHERE app_id = :appId)
                ELSE EXISTS (SELECT 1 FROM developers WHERE id = :developerId AND disabled_at IS NULL) END`,
  );
  const deletePasswordLinks = db.prepare("DELETE FROM one_time_links WHERE developer_id = :developerId AND purpose <> 'invitation'");
  const deleteInvitations = db.prepare("DELETE FROM one_time_links WHERE app_id = :appId AND email = :email AND purpose = 'invitation'");
  return {
    insert(link) {
      if (link.purpose === 'invitation') deleteInvitations.run({ appId: link.appId, email: link.email });
      else deletePasswordLinks.run({ developerId: link.developerId });
      return insert.run({ ...link }).changes > 0;
    },
    deletePasswordLinksOf(developerId) {
      deletePasswordLinks.run({ developerId });
    },
  };
}

export function sqliteOneTimeLinkStore(db: SqliteDatabase, audit: SqliteAccountAuditWrites, writes: SqliteLinkWrites): OneTimeLinkStore {
  const statements = {
    findById: db.prepare('SELECT * FROM one_time_links WHERE id = :id'),
    invitationsOf: db.prepare(
      "SELECT * FROM one_time_links WHERE app_id = :appId AND purpose = 'invitation' AND expires_at > :now ORDER BY created_at DESC, id",
    ),
    delete: db.prepare('DELETE FROM one_time_links WHERE id = :id'),
    deleteExpired: db.prepare('DELETE FROM one_time_links WHERE id IN (SELECT id FROM one_time_links WHERE expires_at <= :now LIMIT :batch)'),
  };
  const insert = immediateTransaction(db, (link: OneTimeLinkRecord, events: Parameters<SqliteAccountAuditWrites>[0]): true | undefined => {
    if (!writes.insert(link)) return undefined;
    audit(events);
    return true;
  });
  const remove = immediateTransaction(db, (id: string, events: Parameters<SqliteAccountAuditWrites>[0]): boolean => {
    if (statements.delete.run({ id }).changes === 0) return false;
    audit(events);
    return true;
  });
  return {
    async insert(link, events) {
      return insert(link, events());
    },
    async findById(id) {
      const row = statements.findById.get({ id }) as LinkRow | undefined;
      return row === undefined ? undefined : toLink(row);
    },
    async invitationsOf(appId, now) {
      return (statements.invitationsOf.all({ appId, now }) as LinkRow[]).map(toLink);
    },
    async delete(id, events) {
      return remove(id, events());
    },
    async deleteExpired(now, batch) {
      return statements.deleteExpired.run({ now, batch }).changes;
    },
  };
}

export function toLink(row: LinkRow): OneTimeLinkRecord {
  return {
    id: row.id,
    secretHash: Buffer.from(row.secret_hash),
    purpose: row.purpose,
    developerId: row.developer_id,
    appId: row.app_id,
    email: row.email,
    invitedBy: row.invited_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
