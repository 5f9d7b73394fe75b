import type { AppRole } from '../../developers/roles.js';
import type { AppMemberStore, AppMembership } from '../../developers/store.js';
import type { PostgresQueries } from './connection.js';
import { writeAccountAudit } from './developers.js';

interface MemberRow {
  app_id: string;
  developer_id: string;
  email: string;
  role: AppRole;
  added_at: string;
}

const MEMBERS = 'SELECT m.*, d.email FROM app_members m JOIN developers d ON d.id = m.developer_id';

export function postgresAppMemberStore(db: PostgresQueries): AppMemberStore {
  return {
    async setOwner(appId, developerId, at, events) {
      return db.transaction(async (client) => {
        // The app's row is locked, so that owner changes of one app take turns.
        const app = await client.query('SELECT 1 FROM apps WHERE app_id = $1 FOR UPDATE', [appId]);
        const developer = await client.query('SELECT 1 FROM developers WHERE id = $1 AND disabled_at IS NULL FOR SHARE', [developerId]);
        if ((app.rowCount ?? 0) === 0 || (developer.rowCount ?? 0) === 0) return undefined;
        const previous = await client.query<{ developer_id: string }>("SELECT developer_id FROM app_members WHERE app_id = $1 AND role = 'owner'", [appId]);
        const result = { previousOwnerId: previous.rows[0]?.developer_id ?? null };
        if (result.previousOwnerId === developerId) return result;
        if (result.previousOwnerId !== null) {
          await client.query('DELETE FROM app_members WHERE app_id = $1 AND developer_id = $2', [appId, result.previousOwnerId]);
        }
        await client.query(
          `INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES ($1, $2, 'owner', $3)
           ON CONFLICT (app_id, developer_id) DO UPDATE SET role = 'owner'`,
          [appId, developerId, at],
        );
        await writeAccountAudit(client, events(result));
        return result;
      });
    },
    async acceptInvitation(linkId, developerId, at, events) {
      return db.transaction(async (client) => {
        const developer = await client.query('SELECT 1 FROM developers WHERE id = $1 AND disabled_at IS NULL FOR SHARE', [developerId]);
        if ((developer.rowCount ?? 0) === 0) return undefined;
        // Deleting it is what uses it up: of two acceptances at once, one deletes it.
        const link = await client.query<{ app_id: string }>(
          "DELETE FROM one_time_links WHERE id = $1 AND purpose = 'invitation' AND expires_at > $2 RETURNING app_id",
          [linkId, at],
        );
        const appId = link.rows[0]?.app_id;
        if (appId === undefined) return undefined;
        const inserted = await client.query(
          `INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES ($1, $2, 'collaborator', $3)
           ON CONFLICT (app_id, developer_id) DO NOTHING`,
          [appId, developerId, at],
        );
        const role = await client.query<{ role: AppRole }>('SELECT role FROM app_members WHERE app_id = $1 AND developer_id = $2', [appId, developerId]);
        const result = { appId, role: role.rows[0]!.role, added: (inserted.rowCount ?? 0) > 0 };
        await writeAccountAudit(client, events(result));
        return result;
      });
    },
    async remove(appId, developerId, events) {
      return db.transaction(async (client) => {
        const removed = await client.query<{ role: AppRole }>('DELETE FROM app_members WHERE app_id = $1 AND developer_id = $2 RETURNING role', [
          appId,
          developerId,
        ]);
        const role = removed.rows[0]?.role;
        if (role === undefined) return undefined;
        await writeAccountAudit(client, events(role));
        return role;
      });
    },
    async roleOf(appId, developerId) {
      const result = await db.query<{ role: AppRole }>({
        name: 'tessera-role-of',
        text: 'SELECT role FROM app_members WHERE app_id = $1 AND developer_id = $2',
        values: [appId, developerId],
      });
      return result.rows[0]?.role;
    },
    async ofApp(appId) {
      const result = await db.query<MemberRow>({
        text: `${MEMBERS} WHERE m.app_id = $1 ORDER BY m.role = 'owner' DESC, m.added_at, m.developer_id`,
        values: [appId],
      });
      return result.rows.map(toMembership);
    },
    async ofDeveloper(developerId) {
      const result = await db.query<MemberRow>({ text: `${MEMBERS} WHERE m.developer_id = $1 ORDER BY m.added_at, m.app_id`, values: [developerId] });
      return result.rows.map(toMembership);
    },
  };
}

function toMembership(row: MemberRow): AppMembership {
  return { appId: row.app_id, developerId: row.developer_id, email: row.email, role: row.role, addedAt: Number(row.added_at) };
}
