import type pg from 'pg';
import type { OneTimeLinkRecord } from '../../developers/one-time-link.js';
import type { OneTimeLinkStore } from '../../developers/store.js';
import type { PostgresQueries } from './connection.js';
import { writeAccountAudit } from './developers.js';

interface LinkRow {
  id: string;
  secret_hash: Buffer;
  purpose: OneTimeLinkRecord['purpose'];
  developer_id: string | null;
  app_id: string | null;
  email: string | null;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
}

/**
 * Inserts the link and removes the ones it replaces, in the caller's transaction; false if its
 * developer or app does not exist (or the developer is disabled).
 */
export async function insertLink(client: pg.PoolClient, link: OneTimeLinkRecord): Promise<boolean> {
  if (link.purpose === 'invitation') {
    await client.query("DELETE FROM one_time_links WHERE app_id = $1 AND email = $2 AND purpose = 'invitation'", [link.appId, link.email]);
  } else {
    await deletePasswordLinksOf(client, link.developerId!);
  }
  const result = await client.query({
    name: 'tessera-insert-link',
    text: `INSERT INTO one_time_links (id, secret_hash, purpose, developer_id, app_id, email, invited_by, created_at, expires_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
           WHERE CASE WHEN $4::text IS NULL THEN EXISTS (SELECT 1 FROM apps WHERE app_id = $5::text)
                      ELSE EXISTS (SELECT 1 FROM developers WHERE id = $4::text AND disabled_at IS NULL) END`,
    values: [link.id, link.secretHash, link.purpose, link.developerId, link.appId, link.email, link.invitedBy, link.createdAt, link.expiresAt],
  });
  return (result.rowCount ?? 0) > 0;
}

export async function deletePasswordLinksOf(client: pg.PoolClient, developerId: string): Promise<void> {
  await client.query("DELETE FROM one_time_links WHERE developer_id = $1 AND purpose <> 'invitation'", [developerId]);
}

export function postgresOneTimeLinkStore(db: PostgresQueries): OneTimeLinkStore {
  return {
    async insert(link, events) {
      return db.transaction(async (client) => {
        if (!(await insertLink(client, link))) return undefined;
        await writeAccountAudit(client, events());
        return true as const;
      });
    },
    async findById(id) {
      const result = await db.query<LinkRow>({ name: 'tessera-find-link', text: 'SELECT * FROM one_time_links WHERE id = $1', values: [id] });
      const row = result.rows[0];
      return row === undefined ? undefined : toLink(row);
    },
    async invitationsOf(appId, now) {
      const result = await db.query<LinkRow>({
        text: "SELECT * FROM one_time_links WHERE app_id = $1 AND purpose = 'invitation' AND expires_at > $2 ORDER BY created_at DESC, id",
        values: [appId, now],
      });
      return result.rows.map(toLink);
    },
    async delete(id, events) {
      return db.transaction(async (client) => {
        const result = await client.query('DELETE FROM one_time_links WHERE id = $1', [id]);
        if ((result.rowCount ?? 0) === 0) return false;
        await writeAccountAudit(client, events());
        return true;
      });
    },
    async deleteExpired(now, batch) {
      const result = await db.query({
        text: 'DELETE FROM one_time_links WHERE id IN (SELECT id FROM one_time_links WHERE expires_at <= $1 LIMIT $2)',
        values: [now, batch],
      });
      return result.rowCount ?? 0;
    },
  };
}

function toLink(row: LinkRow): OneTimeLinkRecord {
  return {
    id: row.id,
    secretHash: row.secret_hash,
    purpose: row.purpose,
    developerId: row.developer_id,
    appId: row.app_id,
    email: row.email,
    invitedBy: row.invited_by,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
}
