import type pg from 'pg';
import { DEFAULT_APP_CONFIGURATION, type AppConfiguration, type AppRecord } from '../../apps/app.js';
import { AppConflictError, type AppStore } from '../../apps/store.js';
import type { AppRole } from '../../developers/roles.js';
import type { PostgresQueries } from './connection.js';
import { insertDeveloperEvents } from './developers.js';
import { isUniqueViolation } from './errors.js';
import { deleteEventsOfApp, insertEvents } from './events.js';
import { claimOnce } from './once-claims.js';
import { deleteRevokedTokensOfApp } from './revoked-tokens.js';
import { deleteTokensOfApp } from './tokens.js';

interface AppRow {
  app_id: string;
  name: string;
  app_key: string;
  client_id: string;
  client_secret_hash: Buffer;
  admin_id: string;
  created_at: string;
  configuration: Partial<AppConfiguration>;
  anonymous_cutoff: string | null;
  previous_secret_hash: Buffer | null;
  previous_secret_valid_until: string | null;
}

export function postgresAppStore(db: PostgresQueries): AppStore {
  return {
    async insert(app) {
      try {
        await db.query(insertAppQuery(app));
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppConflictError();
        throw error;
      }
    },
    async insertOwned(app, { developerId, maxOwnedApps, once }, audit) {
      try {
        return await db.transaction(async (client) => {
          // The developer's row is locked, so that insertions for one developer take turns and each
          // counts what the one before it inserted. NO KEY UPDATE: rows that merely reference the
          // developer (its sessions, its events) do not wait for it.
          const developer = await client.query('SELECT 1 FROM developers WHERE id = $1 AND disabled_at IS NULL FOR NO KEY UPDATE', [developerId]);
          if ((developer.rowCount ?? 0) === 0) return undefined;
          const owned = await client.query<{ n: string }>("SELECT count(*) AS n FROM app_members WHERE developer_id = $1 AND role = 'owner'", [
            developerId,
          ]);
          const ownedApps = Number(owned.rows[0]?.n ?? 0);
          if (maxOwnedApps !== null && ownedApps >= maxOwnedApps) return { inserted: false, ownedApps };
          await claimOnce(client, once);
          await client.query(insertAppQuery(app));
          await client.query("INSERT INTO app_members (app_id, developer_id, role, added_at) VALUES ($1, $2, 'owner', $3)", [
            app.appId,
            developerId,
            app.createdAt,
          ]);
          await insertEvents(client, audit());
          return { inserted: true, ownedApps };
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppConflictError();
        throw error;
      }
    },
    async findById(appId) {
      const result = await db.query<AppRow>({ name: 'tessera-find-app', text: 'SELECT * FROM apps WHERE app_id = $1', values: [appId] });
      const row = result.rows[0];
      return row === undefined ? undefined : toApp(row);
    },
    async list() {
      const result = await db.query<AppRow>({ text: 'SELECT * FROM apps ORDER BY created_at, app_id' });
      return result.rows.map(toApp);
    },
    async count() {
      const result = await db.query<{ n: string }>({ text: 'SELECT count(*) AS n FROM apps' });
      return Number(result.rows[0]?.n ?? 0);
    },
    async rotateClientSecret(appId, hash, { revokeAdminTokens, previousSecretValidUntil, once }, audit) {
      return db.transaction(async (client) => {
        // The right-hand sides read the row as it was: the replaced hash becomes the previous one.
        const updated = await client.query(
          `UPDATE apps SET previous_secret_hash = CASE WHEN $3::bigint IS NULL THEN NULL ELSE client_secret_hash END,
                           previous_secret_valid_until = $3::bigint,
                           client_secret_hash = $2
           WHERE app_id = $1`,
          [appId, hash, previousSecretValidUntil],
        );
        if ((updated.rowCount ?? 0) === 0) return undefined;
        await claimOnce(client, once);
        const rotation = { adminTokensRevoked: revokeAdminTokens ? await deleteTokensOfApp(client, appId, 'admin') : 0 };
        await insertEvents(client, audit(rotation));
        return rotation;
      });
    },
    async updateConfiguration(appId, changes, audit) {
      return db.transaction(async (client) => {
        const result = await client.query<AppRow>({
          name: 'tessera-update-configuration',
          text: 'UPDATE apps SET configuration = configuration || $2::jsonb WHERE app_id = $1 RETURNING *',
          values: [appId, JSON.stringify(changes)],
        });
        const row = result.rows[0];
        if (row === undefined) return undefined;
        const updated = toApp(row);
        await insertEvents(client, audit(updated));
        return updated;
      });
    },
    async delete(appId, audit) {
      return db.transaction(async (client) => {
        // Locked first, so that no one becomes a member or the owner between reading the members
        // and the deletion, which takes the memberships with it: an owner change locks the app's
        // row too, and adding a collaborator checks its reference to the row, which waits.
        const locked = await client.query<AppRow>('SELECT * FROM apps WHERE app_id = $1 FOR UPDATE', [appId]);
        const row = locked.rows[0];
        if (row === undefined) return false;
        const members = await client.query<{ developer_id: string; role: AppRole }>(
          "SELECT developer_id, role FROM app_members WHERE app_id = $1 ORDER BY role = 'owner' DESC, added_at, developer_id",
          [appId],
        );
        await deleteTokensOfApp(client, appId, 'all');
        await deleteRevokedTokensOfApp(client, appId);
        await deleteEventsOfApp(client, appId);
        await client.query('DELETE FROM apps WHERE app_id = $1', [appId]);
        const deleted = { app: toApp(row), members: members.rows.map((member) => ({ developerId: member.developer_id, role: member.role })) };
        await insertDeveloperEvents(client, audit(deleted));
        return true;
      });
    },
  };
}

function insertAppQuery(app: AppRecord): pg.QueryConfig {
  return {
    name: 'tessera-insert-app',
    text: `INSERT INTO apps (app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration,
                             previous_secret_hash, previous_secret_valid_until)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    values: [
      app.appId,
      app.name,
      app.appKey,
      app.clientId,
      app.clientSecretHash,
      app.adminId,
      app.createdAt,
      JSON.stringify(app.configuration),
      app.previousSecret?.hash ?? null,
      app.previousSecret?.validUntil ?? null,
    ],
  };
}

function toApp(row: AppRow): AppRecord {
  return {
    appId: row.app_id,
    name: row.name,
    appKey: row.app_key,
    clientId: row.client_id,
    clientSecretHash: row.client_secret_hash,
    adminId: row.admin_id,
    createdAt: Number(row.created_at),
    configuration: { ...DEFAULT_APP_CONFIGURATION, ...row.configuration },
    anonymousCutoff: row.anonymous_cutoff === null ? null : Number(row.anonymous_cutoff),
    previousSecret:
      row.previous_secret_hash === null || row.previous_secret_valid_until === null
        ? null
        : { hash: row.previous_secret_hash, validUntil: Number(row.previous_secret_valid_until) },
  };
}
