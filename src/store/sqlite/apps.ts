import { DEFAULT_APP_CONFIGURATION, type AppConfiguration, type AppRecord } from '../../apps/app.js';
import { AppConflictError, type AppStore, type DeletedApp, type NewAppOwner, type OwnedAppInsertion, type SecretRotation } from '../../apps/store.js';
import type { NewDeveloperEvent } from '../../developers/events.js';
import type { AppRole } from '../../developers/roles.js';
import type { AuditOf } from '../../events/event.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';
import type { SqliteDeveloperEventWrites } from './developers.js';
import { isUniqueViolation } from './errors.js';
import type { SqliteEventWrites } from './events.js';
import type { SqliteOnceClaim } from './once-claims.js';
import type { SqliteTokenWrites } from './tokens.js';

interface AppRow {
  app_id: string;
  name: string;
  app_key: string;
  client_id: string;
  client_secret_hash: Buffer;
  admin_id: string;
  created_at: number;
  configuration: string;
  anonymous_cutoff: number | null;
  previous_secret_hash: Buffer | null;
  previous_secret_valid_until: number | null;
}

type RotationOptions = Parameters<AppStore['rotateClientSecret']>[2];

export function sqliteAppStore(
  db: SqliteDatabase,
  tokens: SqliteTokenWrites,
  events: SqliteEventWrites,
  developerEvents: SqliteDeveloperEventWrites,
  claimOnce: SqliteOnceClaim,
): AppStore {
  const statements = {
    insertApp: db.prepare(
      `INSERT INTO apps (app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration,
                         previous_secret_hash, previous_secret_valid_until)
       VALUES (:appId, :name, :appKey, :clientId, :clientSecretHash, :adminId, :createdAt, :configuration,
               :previousSecretHash, :previousSecretValidUntil)`,
    ),
    developerEnabled: db.prepare('SELECT EXISTS (SELECT 1 FROM developers WHERE id = :developerId AND disabled_at IS NULL) AS ok'),
    ownedApps: db.prepare("SELECT count(*) AS n FROM app_members WHERE developer_id = :developerId AND role = 'owner'"),
    insertOwner: db.prepare("INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES (:appId, :developerId, 'owner', :at)"),
    findApp: db.prepare('SELECT * FROM apps WHERE app_id = :appId'),
    listApps: db.prepare('SELECT * FROM apps ORDER BY created_at, app_id'),
    countApps: db.prepare('SELECT count(*) AS n FROM apps'),
    // The right-hand sides read the row as it was: the replaced hash becomes the previous one.
    updateSecret: db.prepare(
      `UPDATE apps SET previous_secret_hash = CASE WHEN :validUntil IS NULL THEN NULL ELSE client_secret_hash END,
                       previous_secret_valid_until = :validUntil,
                       client_secret_hash = :hash
       WHERE app_id = :appId`,
    ),
    members: db.prepare(
      "SELECT developer_id, role FROM app_members WHERE app_id = :appId ORDER BY role = 'owner' DESC, added_at, developer_id",
    ),
    deleteApp: db.prepare('DELETE FROM apps WHERE app_id = :appId RETURNING *'),
    updateConfiguration: db.prepare(
      'UPDATE apps SET configuration = json_patch(configuration, :changes) WHERE app_id = :appId RETURNING *',
    ),
  };

  const insertApp = (app: AppRecord): void => {
    statements.insertApp.run({
      ...app,
      configuration: JSON.stringify(app.configuration),
      previousSecretHash: app.previousSecret?.hash ?? null,
      previousSecretValidUntil: app.previousSecret?.validUntil ?? null,
    });
  };
  // An IMMEDIATE transaction holds the write lock from its start: insertions take turns, and each
  // counts what the one before it inserted.
  const insertOwned = immediateTransaction(
    db,
    (app: AppRecord, { developerId, maxOwnedApps, once }: NewAppOwner, audit: AuditOf<void>): OwnedAppInsertion | undefined => {
      if ((statements.developerEnabled.get({ developerId }) as { ok: number }).ok !== 1) return undefined;
      const ownedApps = (statements.ownedApps.get({ developerId }) as { n: number }).n;
      if (maxOwnedApps !== null && ownedApps >= maxOwnedApps) return { inserted: false, ownedApps };
      claimOnce(once);
      insertApp(app);
      statements.insertOwner.run({ appId: app.appId, developerId, at: app.createdAt });
      events.insert(audit());
      return { inserted: true, ownedApps };
    },
  );
  const deleteApp = immediateTransaction(db, (appId: string, audit: (deleted: DeletedApp) => NewDeveloperEvent[]): boolean => {
    // Read before the deletion, which takes the memberships with it.
    const members = (statements.members.all({ appId }) as { developer_id: string; role: AppRole }[]).map((row) => ({
      developerId: row.developer_id,
      role: row.role,
    }));
    tokens.deleteOfApp(appId, 'all');
    tokens.deleteRevokedOfApp(appId);
    events.deleteOfApp(appId);
    const row = statements.deleteApp.get({ appId }) as AppRow | undefined;
    if (row === undefined) return false;
    developerEvents(audit({ app: toApp(row), members }));
    return true;
  });
  const rotateClientSecret = immediateTransaction(
    db,
    (appId: string, hash: Buffer, options: RotationOptions, audit: AuditOf<SecretRotation>): SecretRotation | undefined => {
      if (statements.updateSecret.run({ appId, hash, validUntil: options.previousSecretValidUntil }).changes === 0) return undefined;
      claimOnce(options.once);
      const { revokeAdminTokens } = options;
      const rotation = { adminTokensRevoked: revokeAdminTokens ? tokens.deleteOfApp(appId, 'admin') : 0 };
      events.insert(audit(rotation));
      return rotation;
    },
  );
  const updateConfiguration = immediateTransaction(
    db,
    (appId: string, changes: Partial<AppConfiguration>, audit: AuditOf<AppRecord>): AppRecord | undefined => {
      const row = statements.updateConfiguration.get({ appId, changes: JSON.stringify(changes) }) as AppRow | undefined;
      if (row === undefined) return undefined;
      const updated = toApp(row);
      events.insert(audit(updated));
      return updated;
    },
  );

  return {
    async insert(app) {
      try {
        insertApp(app);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppConflictError();
        throw error;
      }
    },
    async insertOwned(app, owner, audit) {
      try {
        return insertOwned(app, owner, audit);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppConflictError();
        throw error;
      }
    },
    async findById(appId) {
      const row = statements.findApp.get({ appId }) as AppRow | undefined;
      return row === undefined ? undefined : toApp(row);
    },
    async list() {
      return (statements.listApps.all() as AppRow[]).map(toApp);
    },
    async count() {
      return (statements.countApps.get() as { n: number }).n;
    },
    async rotateClientSecret(appId, hash, options, audit) {
      return rotateClientSecret(appId, hash, options, audit);
    },
    async updateConfiguration(appId, changes, audit) {
      return updateConfiguration(appId, changes, audit);
    },
    async delete(appId, audit) {
      return deleteApp(appId, audit);
    },
  };
}

function toApp(row: AppRow): AppRecord {
  return {
    appId: row.app_id,
    name: row.name,
    appKey: row.app_key,
    clientId: row.client_id,
    clientSecretHash: Buffer.from(row.client_secret_hash),
    adminId: row.admin_id,
    createdAt: row.created_at,
    configuration: { ...DEFAULT_APP_CONFIGURATION, ...(JSON.parse(row.configuration) as Partial<AppConfiguration>) },
    anonymousCutoff: row.anonymous_cutoff,
    previousSecret:
      row.previous_secret_hash === null || row.previous_secret_valid_until === null
        ? null
        : { hash: Buffer.from(row.previous_secret_hash), validUntil: row.previous_secret_valid_until },
  };
}
