import type { OneTimeLinkRecord } from '../../developers/one-time-link.js';
import type { OneTimeLinkStore } from '../../developers/store.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

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

const COLUMNS = 'id, secret_hash, purpose, developer_id, app_id, email, invited_by, created_at, expires_at';

/**
 * Inserts the link and removes the ones it replaces, in the caller's transaction; false if its
 * developer or app does not exist (or the developer is disabled).
 */
export async function insertLink(tx: SqlRunner, link: OneTimeLinkRecord): Promise<boolean> {
  if (link.purpose === 'invitation') {
    await tx.run("DELETE FROM one_time_links WHERE app_id = :appId AND email = :email AND purpose = 'invitation'", {
      appId: link.appId,
      email: link.email,
    });
  } else {
    await deletePasswordLinksOf(tx, link.developerId!);
  }
  const inserted = await tx.run(
    `INSERT INTO one_time_links (${COLUMNS})
     SELECT :id, :secretHash, :purpose, :developerId, :appId, :email, :invitedBy, :createdAt, :expiresAt
     WHERE CASE WHEN CAST(:developerId AS text) IS NULL THEN EXISTS (SELECT 1 FROM apps WHERE app_id = CAST(:appId AS text))
                ELSE EXISTS (SELECT 1 FROM developers WHERE id = CAST(:developerId AS text) AND disabled_at IS NULL) END`,
    { ...link },
  );
  return inserted > 0;
}

/** Removes every password link of the developer, in the caller's transaction. */
export async function deletePasswordLinksOf(tx: SqlRunner, developerId: string): Promise<void> {
  await tx.run("DELETE FROM one_time_links WHERE developer_id = :developerId AND purpose <> 'invitation'", { developerId });
}

export function sqlOneTimeLinkStore(db: SqlRunner): OneTimeLinkStore {
  return {
    async insert(link) {
      return db.transaction(async (tx) => ((await insertLink(tx, link)) ? true : undefined));
    },
    async usePasswordLink(id, developerId) {
      const used = await db.run("DELETE FROM one_time_links WHERE id = :id AND developer_id = :developerId AND purpose <> 'invitation'", {
        id,
        developerId,
      });
      return used === 0 ? undefined : true;
    },
    async findById(id) {
      const row = await db.get<LinkRow>(`SELECT ${COLUMNS} FROM one_time_links WHERE id = :id`, { id });
      return row === undefined ? undefined : toLink(row);
    },
    async invitationsOf(appId, now) {
      const rows = await db.all<LinkRow>(
        `SELECT ${COLUMNS} FROM one_time_links WHERE app_id = :appId AND purpose = 'invitation' AND expires_at > :now ORDER BY created_at DESC, id`,
        { appId, now },
      );
      return rows.map(toLink);
    },
    async delete(id) {
      return (await db.run('DELETE FROM one_time_links WHERE id = :id', { id })) === 0 ? undefined : true;
    },
    async deleteExpired(now, batch) {
      return db.run('DELETE FROM one_time_links WHERE id IN (SELECT id FROM one_time_links WHERE expires_at <= :now LIMIT :batch)', {
        now,
        batch,
      });
    },
  };
}

function toLink(row: LinkRow): OneTimeLinkRecord {
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
