import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { AppStore, StoredAppKeys } from '../../apps/store.js';
import type { AppRole } from '../../developers/roles.js';
import { withdrawAdminGrants } from './admin-grants.js';
import { batchInsert } from './batch.js';
import { deleteEventsOfApp } from './events.js';
import { deleteRevokedTokensOfApp } from './revoked-tokens.js';
import { withRowLock, type SqlRunner, type Statement } from 'tessera-tokens/internal/store/sql/runner.js';
import { bytesColumn } from 'tessera-tokens/internal/store/sql/rows.js';
import {
  appFinder,
  appReads,
  APP_COLUMN_LIST,
  CREDENTIALS_OF_APP,
  idsParam,
  selectApps,
  toApp,
  type AppRow,
} from 'tessera-tokens/internal/store/sql/app-reads.js';
import { deleteTokensOfApp } from './tokens.js';

/**
 * An app, its row locked on PostgreSQL until the transaction ends, as `withRowLock` locks a row
 * (SQLite's write transactions, `BEGIN IMMEDIATE`, hold the whole file already): `UPDATE` for its
 * deletion, `NO KEY UPDATE` for a change that keeps its key, which leaves rows referring to the app
 * free to be written meanwhile.
 */
function selectAppLocked(lock: 'UPDATE' | 'NO KEY UPDATE'): Statement {
  const select = selectApps('WHERE app_id = :appId');
  return { sqlite: select.sqlite, postgres: `${select.postgres} FOR ${lock} OF apps` };
}

const SELECT_APP_LOCKED = { UPDATE: selectAppLocked('UPDATE'), 'NO KEY UPDATE': selectAppLocked('NO KEY UPDATE') };
const LOCK_APP: Record<'UPDATE' | 'NO KEY UPDATE', Statement> = {
  UPDATE: withRowLock('SELECT 1 AS found FROM apps WHERE app_id = :appId', 'UPDATE'),
  'NO KEY UPDATE': withRowLock('SELECT 1 AS found FROM apps WHERE app_id = :appId', 'NO KEY UPDATE'),
};

/** Sets the configuration fields of `:changes` (JSON), leaving the others as they are. */
const PATCH_CONFIGURATION = {
  sqlite: `UPDATE apps SET configuration = json_patch(configuration, :changes) WHERE app_id = :appId`,
  postgres: `UPDATE apps SET configuration = configuration || :changes::jsonb WHERE app_id = :appId`,
};

const insertAppBatch = batchInsert('apps', [
  ['app_id', 'text'],
  ['name', 'text'],
  ['app_key', 'text'],
  ['client_id', 'text'],
  ['client_secret_hash', 'bytes'],
  ['admin_id', 'text'],
  ['created_at', 'bigint'],
  ['configuration', 'json'],
]);

const insertOwnerBatch = batchInsert('app_members', [
  ['app_id', 'text'],
  ['developer_id', 'text'],
  ['role', 'text'],
  ['added_at', 'bigint'],
]);

/** Rows a statement of `insertMany` and ids a lookup of `findByKeys`: each well under the statement timeout. */
const BATCH_ROWS = 2_000;
const LOOKUP_IDS = 10_000;

/** `select` of the rows whose `column` is one of the ids of the parameter `:ids` (`idsParam`), and `rest`. */
function selectAmong(select: string, column: string, rest = ''): { sqlite: string; postgres: string } {
  return {
    sqlite: `${select} WHERE ${column} IN (SELECT value FROM json_each(:ids)) ${rest}`,
    postgres: `${select} WHERE ${column} = ANY(:ids::text[]) ${rest}`,
  };
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}

/** `batchReads`: PostgreSQL's reads of one event-loop turn share one statement (not in a transaction, whose reads are its own). */
export function sqlAppStore(db: SqlRunner, { batchReads = true }: { batchReads?: boolean } = {}): AppStore {
  const reads = batchReads ? appReads(db) : { findById: appFinder(db) };
  return {
    async insert(app) {
      await insertApp(db, app);
    },
    async lock(appId, mode) {
      return (await db.get(LOCK_APP[mode], { appId })) === undefined ? undefined : true;
    },
    async insertMany(apps) {
      return db.transaction(async (tx) => {
        // The owners are locked against a concurrent disabling until the memberships are written.
        const ownerIds = [...new Set(apps.flatMap(({ ownerId }) => (ownerId === null ? [] : [ownerId])))];
        for (const ids of chunks(ownerIds, LOOKUP_IDS)) {
          const select = selectAmong('SELECT id FROM developers', 'id', 'AND disabled_at IS NULL');
          const enabled = await tx.all<{ id: string }>(
            { sqlite: select.sqlite, postgres: `${select.postgres} FOR SHARE` },
            idsParam(tx.dialect, ids),
          );
          if (enabled.length !== ids.length) return undefined;
        }
        for (const batch of chunks(apps, BATCH_ROWS)) {
          const rows = batch.map(({ app }) => [
            app.appId,
            app.name,
            app.appKey,
            app.clientId,
            app.clientSecretHash,
            app.adminId,
            app.createdAt,
            JSON.stringify(app.configuration),
          ]);
          await tx.run(insertAppBatch.statement, insertAppBatch.params(tx.dialect, rows));
        }
        const owned = apps.flatMap(({ app, ownerId }) => (ownerId === null ? [] : [[app.appId, ownerId, 'owner', app.createdAt]]));
        for (const rows of chunks(owned, BATCH_ROWS)) await tx.run(insertOwnerBatch.statement, insertOwnerBatch.params(tx.dialect, rows));
        return true as const;
      });
    },
    async findByKeys(appIds, clientIds) {
      const found = new Map<string, StoredAppKeys>();
      for (const [column, ids] of [
        ['app_id', appIds],
        ['client_id', clientIds],
      ] as const) {
        for (const batch of chunks(ids, LOOKUP_IDS)) {
          const rows = await db.all<Pick<AppRow, 'app_id' | 'app_key' | 'client_id' | 'client_secret_hash'>>(
            selectAmong('SELECT app_id, app_key, client_id, client_secret_hash FROM apps', column),
            idsParam(db.dialect, batch),
          );
          for (const row of rows) {
            found.set(row.app_id, {
              appId: row.app_id,
              appKey: row.app_key,
              clientId: row.client_id,
              clientSecretHash: bytesColumn(row.client_secret_hash),
            });
          }
        }
      }
      return [...found.values()];
    },
    ...reads,
    async list() {
      return (await db.all<AppRow>(selectApps('ORDER BY created_at, app_id'))).map(toApp);
    },
    async listWithOwners() {
      const ownerEmail = `(SELECT d.email FROM app_members m JOIN developers d ON d.id = m.developer_id
                           WHERE m.app_id = apps.app_id AND m.role = 'owner') AS owner_email`;
      const rows = await db.all<AppRow & { owner_email: string | null }>({
        sqlite: `SELECT ${APP_COLUMN_LIST}, ${CREDENTIALS_OF_APP.sqlite}, ${ownerEmail} FROM apps ORDER BY created_at, app_id`,
        postgres: `SELECT ${APP_COLUMN_LIST}, ${CREDENTIALS_OF_APP.postgres}, ${ownerEmail} FROM apps ORDER BY created_at, app_id`,
      });
      return rows.map((row) => ({ app: toApp(row), ownerEmail: row.owner_email }));
    },
    async count() {
      return (await db.get<{ n: number }>('SELECT count(*) AS n FROM apps'))?.n ?? 0;
    },
    async rotateClientSecret(appId, hash, previousSecretValidUntil) {
      return db.transaction(async (tx) => {
        if (!(await withdrawAdminGrants(tx, appId))) return undefined;
        // The right-hand sides read the row as it was: the replaced hash becomes the previous one.
        const updated = await tx.run(
          `UPDATE apps SET previous_secret_hash = CASE WHEN CAST(:validUntil AS BIGINT) IS NULL THEN NULL ELSE client_secret_hash END,
                           previous_secret_valid_until = :validUntil,
                           client_secret_hash = :hash
           WHERE app_id = :appId`,
          { appId, hash, validUntil: previousSecretValidUntil },
        );
        return updated === 0 ? undefined : (true as const);
      });
    },
    async endPreviousSecret(appId, now) {
      return db.transaction(async (tx) => {
        const read = () =>
          tx.get<{ until: number | null }>('SELECT previous_secret_valid_until AS until FROM apps WHERE app_id = :appId', { appId });
        const seen = await read();
        if (seen === undefined) return undefined;
        if (seen.until === null || seen.until <= now) return { validUntil: null };
        await withdrawAdminGrants(tx, appId);
        // Read again under the app's lock: a rotation meanwhile replaced the previous secret.
        const row = (await read())!;
        if (row.until === null || row.until <= now) return { validUntil: null };
        await tx.run('UPDATE apps SET previous_secret_hash = NULL, previous_secret_valid_until = NULL WHERE app_id = :appId', { appId });
        return { validUntil: row.until };
      });
    },
    async updateConfiguration(appId, changes) {
      return db.transaction(async (tx) => {
        const changed = await tx.run(PATCH_CONFIGURATION, { appId, changes: JSON.stringify(changes) });
        const row = changed === 0 ? undefined : await tx.get<AppRow>(selectApps('WHERE app_id = :appId'), { appId });
        return row === undefined ? undefined : toApp(row);
      });
    },
    async findLocked(appId, mode) {
      const row = await db.get<AppRow>(SELECT_APP_LOCKED[mode], { appId });
      return row === undefined ? undefined : toApp(row);
    },
    async patchConfiguration(appId, changes) {
      return (await db.run(PATCH_CONFIGURATION, { appId, changes: JSON.stringify(changes) })) === 0 ? undefined : true;
    },
    async delete(appId) {
      return db.transaction(async (tx) => {
        // Locked first on PostgreSQL, so that no one becomes a member or the owner between reading
        // the members and the deletion, which takes the memberships with it: an owner change locks
        // the app's row too, and adding a collaborator checks its reference to the row, which waits.
        const row = await tx.get<AppRow>(SELECT_APP_LOCKED.UPDATE, { appId });
        if (row === undefined) return undefined;
        const members = await tx.all<{ developer_id: string; role: AppRole }>(
          "SELECT developer_id, role FROM app_members WHERE app_id = :appId ORDER BY role = 'owner' DESC, added_at, developer_id",
          { appId },
        );
        await deleteTokensOfApp(tx, appId, 'all');
        await deleteRevokedTokensOfApp(tx, appId);
        await deleteEventsOfApp(tx, appId);
        await tx.run('DELETE FROM apps WHERE app_id = :appId', { appId });
        return { app: toApp(row), members: members.map((member) => ({ developerId: member.developer_id, role: member.role })) };
      });
    },
  };
}

async function insertApp(db: SqlRunner, app: AppRecord): Promise<void> {
  await db.run(
    `INSERT INTO apps (app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration,
                       previous_secret_hash, previous_secret_valid_until)
     VALUES (:appId, :name, :appKey, :clientId, :clientSecretHash, :adminId, :createdAt, :configuration,
             :previousSecretHash, :previousSecretValidUntil)`,
    {
      ...app,
      configuration: JSON.stringify(app.configuration),
      previousSecretHash: app.previousSecret?.hash ?? null,
      previousSecretValidUntil: app.previousSecret?.validUntil ?? null,
    },
  );
}
