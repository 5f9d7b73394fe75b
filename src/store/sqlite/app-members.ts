import type { AppRole } from '../../developers/roles.js';
import type { AppMemberStore, AppMembership } from '../../developers/store.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';
import type { SqliteAccountAuditWrites } from './developers.js';

interface MemberRow {
  app_id: string;
  developer_id: string;
  email: string;
  role: AppRole;
  added_at: number;
}

type Audit<Result> = (result: Result) => Parameters<SqliteAccountAuditWrites>[0];

export function sqliteAppMemberStore(db: SqliteDatabase, audit: SqliteAccountAuditWrites): AppMemberStore {
  const statements = {
    appAndDeveloperExist: db.prepare(
      `SELECT EXISTS (SELECT 1 FROM apps WHERE app_id = :appId)
          AND EXISTS (SELECT 1 FROM developers WHERE id = :developerId AND disabled_at IS NULL) AS ok`,
    ),
    developerEnabled: db.prepare('SELECT EXISTS (SELECT 1 FROM developers WHERE id = :developerId AND disabled_at IS NULL) AS ok'),
    owner: db.prepare("SELECT developer_id FROM app_members WHERE app_id = :appId AND role = 'owner'"),
    deleteMember: db.prepare('DELETE FROM app_members WHERE app_id = :appId AND developer_id = :developerId RETURNING role'),
    makeOwner: db.prepare(
      `INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES (:appId, :developerId, 'owner', :at)
       ON CONFLICT (app_id, developer_id) DO UPDATE SET role = 'owner'`,
    ),
    addCollaborator: db.prepare(
      `INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES (:appId, :developerId, 'collaborator', :at)
       ON CONFLICT (app_id, developer_id) DO NOTHING`,
    ),
    invitation: db.prepare("SELECT app_id FROM one_time_links WHERE id = :linkId AND purpose = 'invitation' AND expires_at > :at"),
    deleteLink: db.prepare('DELETE FROM one_time_links WHERE id = :linkId'),
    roleOf: db.prepare('SELECT role FROM app_members WHERE app_id = :appId AND developer_id = :developerId'),
    ofApp: db.prepare(
      `SELECT m.*, d.email FROM app_members m JOIN developers d ON d.id = m.developer_id
       WHERE m.app_id = :appId ORDER BY m.role = 'owner' DESC, m.added_at, m.developer_id`,
    ),
    ofDeveloper: db.prepare(
      `SELECT m.*, d.email FROM app_members m JOIN developers d ON d.id = m.developer_id
       WHERE m.developer_id = :developerId ORDER BY m.added_at, m.app_id`,
    ),
  };

  const setOwner = immediateTransaction(db, (appId: string, developerId: string, at: number, events: Audit<{ previousOwnerId: string | null }>) => {
    if ((statements.appAndDeveloperExist.get({ appId, developerId }) as { ok: number }).ok !== 1) return undefined;
    const previous = statements.owner.get({ appId }) as { developer_id: string } | undefined;
    const result = { previousOwnerId: previous?.developer_id ?? null };
    if (result.previousOwnerId === developerId) return result;
    if (previous !== undefined) statements.deleteMember.get({ appId, developerId: previous.developer_id });
    statements.makeOwner.run({ appId, developerId, at });
    audit(events(result));
    return result;
  });
  const acceptInvitation = immediateTransaction(
    db,
    (linkId: string, developerId: string, at: number, events: Audit<{ appId: string; role: AppRole; added: boolean }>) => {
      const link = statements.invitation.get({ linkId, at }) as { app_id: string } | undefined;
      if (link === undefined) return undefined;
      if ((statements.developerEnabled.get({ developerId }) as { ok: number }).ok !== 1) return undefined;
      statements.deleteLink.run({ linkId });
      const added = statements.addCollaborator.run({ appId: link.app_id, developerId, at }).changes > 0;
      const { role } = statements.roleOf.get({ appId: link.app_id, developerId }) as { role: AppRole };
      const result = { appId: link.app_id, role, added };
      audit(events(result));
      return result;
    },
  );
  const remove = immediateTransaction(db, (appId: string, developerId: string, events: Audit<AppRole>) => {
    const removed = statements.deleteMember.get({ appId, developerId }) as { role: AppRole } | undefined;
    if (removed === undefined) return undefined;
    audit(events(removed.role));
    return removed.role;
  });

  return {
    async setOwner(appId, developerId, at, events) {
      return setOwner(appId, developerId, at, events);
    },
    async acceptInvitation(linkId, developerId, at, events) {
      return acceptInvitation(linkId, developerId, at, events);
    },
    async remove(appId, developerId, events) {
      return remove(appId, developerId, events);
    },
    async roleOf(appId, developerId) {
      return (statements.roleOf.get({ appId, developerId }) as { role: AppRole } | undefined)?.role;
    },
    async ofApp(appId) {
      return (statements.ofApp.all({ appId }) as MemberRow[]).map(toMembership);
    },
    async ofDeveloper(developerId) {
      return (statements.ofDeveloper.all({ developerId }) as MemberRow[]).map(toMembership);
    },
  };
}

function toMembership(row: MemberRow): AppMembership {
  return { appId: row.app_id, developerId: row.developer_id, email: row.email, role: row.role, addedAt: row.added_at };
}
