import type { AppRole } from '../../developers/roles.js';
import type { AppMemberStore, AppMembership } from '../../developers/store.js';
import { revokeCredentials } from './credentials.js';
import { withRowLock, type SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

interface MemberRow {
  app_id: string;
  developer_id: string;
  email: string;
  role: AppRole;
  added_at: number;
}

const MEMBERS =
  'SELECT m.app_id, m.developer_id, d.email, m.role, m.added_at FROM app_members m JOIN developers d ON d.id = m.developer_id';

/** The app's row, locked so that owner changes of one app take turns. */
const LOCK_APP = withRowLock('SELECT 1 AS found FROM apps WHERE app_id = :appId', 'UPDATE');

/** The enabled developer's row, which no one disables before the transaction ends. */
const SHARE_DEVELOPER = withRowLock('SELECT 1 AS found FROM developers WHERE id = :developerId AND disabled_at IS NULL', 'SHARE');

const ROLE_OF = 'SELECT role FROM app_members WHERE app_id = :appId AND developer_id = :developerId';

export function sqlAppMemberStore(db: SqlRunner): AppMemberStore {
  return {
    async setOwner(appId, developerId, at) {
      return db.transaction(async (tx) => {
        const app = await tx.get(LOCK_APP, { appId });
        const developer = await tx.get(SHARE_DEVELOPER, { developerId });
        if (app === undefined || developer === undefined) return undefined;
        const previous = await tx.get<{ developer_id: string }>(
          "SELECT developer_id FROM app_members WHERE app_id = :appId AND role = 'owner'",
          { appId },
        );
        const result = { previousOwnerId: previous?.developer_id ?? null };
        if (result.previousOwnerId === developerId) return result;
        if (result.previousOwnerId !== null) {
          await tx.run('DELETE FROM app_members WHERE app_id = :appId AND developer_id = :developerId', {
            appId,
            developerId: result.previousOwnerId,
          });
        }
        await tx.run(
          `INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES (:appId, :developerId, 'owner', :at)
           ON CONFLICT (app_id, developer_id) DO UPDATE SET role = 'owner'`,
          { appId, developerId, at },
        );
        return result;
      });
    },
    async acceptInvitation(linkId, developerId, at) {
      return db.transaction(async (tx) => {
        if ((await tx.get(SHARE_DEVELOPER, { developerId })) === undefined) return undefined;
        // Deleting it is what uses it up: of two acceptances at once, one deletes it.
        const link = await tx.get<{ app_id: string }>(
          "DELETE FROM one_time_links WHERE id = :linkId AND purpose = 'invitation' AND expires_at > :at RETURNING app_id",
          { linkId, at },
        );
        if (link === undefined) return undefined;
        const appId = link.app_id;
        const inserted = await tx.run(
          `INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES (:appId, :developerId, 'collaborator', :at)
           ON CONFLICT (app_id, developer_id) DO NOTHING`,
          { appId, developerId, at },
        );
        const member = await tx.get<{ role: AppRole }>(ROLE_OF, { appId, developerId });
        return { appId, role: member!.role, added: inserted > 0 };
      });
    },
    async remove(appId, developerId) {
      return db.transaction(async (tx) => {
        const removed = await tx.get<{ role: AppRole }>(
          'DELETE FROM app_members WHERE app_id = :appId AND developer_id = :developerId RETURNING role',
          {
            appId,
            developerId,
          },
        );
        if (removed === undefined) return undefined;
        // What the developer made in the portal for the app goes with its membership: its secrets were shown to them.
        const credentialsRevoked = await revokeCredentials(tx, appId, { developerId });
        return { role: removed.role, credentialsRevoked };
      });
    },
    async countOwned(developerId) {
      const owned = await db.get<{ n: number }>(
        "SELECT count(*) AS n FROM app_members WHERE developer_id = :developerId AND role = 'owner'",
        {
          developerId,
        },
      );
      return owned?.n ?? 0;
    },
    async insertOwner(appId, developerId, at) {
      await db.run("INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES (:appId, :developerId, 'owner', :at)", {
        appId,
        developerId,
        at,
      });
    },
    async roleOf(appId, developerId) {
      return (await db.get<{ role: AppRole }>(ROLE_OF, { appId, developerId }))?.role;
    },
    async ofApp(appId) {
      const rows = await db.all<MemberRow>(
        `${MEMBERS} WHERE m.app_id = :appId ORDER BY m.role = 'owner' DESC, m.added_at, m.developer_id`,
        { appId },
      );
      return rows.map(toMembership);
    },
    async ofDeveloper(developerId) {
      const rows = await db.all<MemberRow>(`${MEMBERS} WHERE m.developer_id = :developerId ORDER BY m.added_at, m.app_id`, { developerId });
      return rows.map(toMembership);
    },
  };
}

function toMembership(row: MemberRow): AppMembership {
  return { appId: row.app_id, developerId: row.developer_id, email: row.email, role: row.role, addedAt: row.added_at };
}
