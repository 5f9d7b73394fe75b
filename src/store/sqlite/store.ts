import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'libsql';
import { DEFAULT_APP_CONFIGURATION, type AppConfiguration, type AppRecord } from '../../apps/app.js';
import { AppConflictError, type AppStore, type SecretRotation } from '../../apps/store.js';
import type { AuditEvent, AuditOf, NewAuditEvent } from '../../events/event.js';
import type { EventStore } from '../../events/store.js';
import type { PrincipalKind } from '../../principal.js';
import type { RevocationKind } from '../../tokens/revocation.js';
import type { TokenRecord, TokenStore } from '../../tokens/store.js';
import type { Store } from '../store.js';
import { GroupCommit } from '../group-commit.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

// Every statement binds named parameters (`:name` with an object). libsql takes a lone Buffer
// argument for a named-parameter object and aborts the process, so positional binding is avoided.
// Its `pluck()` applies to `all()` only, so single values are read by column name.

interface AppRow {
  app_id: string;
  name: string;
  app_key: string;
  client_id: string;
  client_secret_hash: Buffer;
  admin_id: string;
  created_at: number;
  configuration: string;
}

interface TokenRow {
  verifier_hash: Buffer;
  app_id: string;
  kind: PrincipalKind;
  issued_at: number;
  expires_at: number | null;
}

interface EventRow {
  id: number;
  app_id: string;
  type: AuditEvent['type'];
  at: number;
  principal: AuditEvent['principal'];
  client_address: string | null;
  details: string;
}

export interface SqliteStoreOptions {
  /** How often to look for changes made by other processes (the CLI, other instances). */
  changePollIntervalMs?: number;
}

/**
 * The embedded store: one SQLite file in WAL mode. `synchronous=NORMAL` makes every commit durable
 * against a crash of the process (the WAL is written before a call returns); an operating-system
 * crash or power loss may lose the last commits, which `docs/architecture.md` discusses.
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // A new file is readable by its owner only; SQLite gives the -wal and -shm files the same mode.
    closeSync(openSync(path, 'a', 0o600));
  }
  const db = new Database(path);
  db.exec('PRAGMA busy_timeout = 5000');
  // Switching a new file to WAL and recovering a WAL can report SQLITE_BUSY without waiting for
  // the busy timeout, when several processes (a server, the CLI) open the file at the same moment.
  retryWhileBusy(() => db.exec('PRAGMA journal_mode = WAL'));
  db.exec('PRAGMA synchronous = NORMAL');
  retryWhileBusy(() => migrate(db));

  const statements = {
    insertApp: db.prepare(
      `INSERT INTO apps (app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration)
       VALUES (:appId, :name, :appKey, :clientId, :clientSecretHash, :adminId, :createdAt, :configuration)`,
    ),
    findApp: db.prepare('SELECT * FROM apps WHERE app_id = :appId'),
    listApps: db.prepare('SELECT * FROM apps ORDER BY created_at, app_id'),
    countApps: db.prepare('SELECT count(*) AS n FROM apps'),
    updateSecret: db.prepare('UPDATE apps SET client_secret_hash = :hash WHERE app_id = :appId'),
    deleteApp: db.prepare('DELETE FROM apps WHERE app_id = :appId'),
    updateConfiguration: db.prepare(
      'UPDATE apps SET configuration = json_patch(configuration, :changes) WHERE app_id = :appId RETURNING *',
    ),
    deleteAppTokens: db.prepare('DELETE FROM tokens WHERE app_id = :appId'),
    deleteAppTokensOfKind: db.prepare('DELETE FROM tokens WHERE app_id = :appId AND kind = :kind'),
    deleteAppEvents: db.prepare('DELETE FROM events WHERE app_id = :appId'),
    deleteToken: db.prepare('DELETE FROM tokens WHERE selector = :selector'),
    deleteExpiredTokens: db.prepare(
      `DELETE FROM tokens WHERE selector IN
         (SELECT selector FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch)`,
    ),
    // A whole batch in one statement, as a JSON array of rows: half the cost of a statement per
    // event, which the token endpoint pays for every token.issued.
    insertEvents: db.prepare(
      `INSERT INTO events (app_id, type, at, principal, client_address, details)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(:batch)`,
    ),
    listEvents: db.prepare(
      `SELECT * FROM events WHERE app_id = :appId AND (:type IS NULL OR type = :type) AND id < :beforeId
       ORDER BY id DESC LIMIT :limit`,
    ),
    listEventsAfter: db.prepare(
      `SELECT * FROM events WHERE app_id = :appId AND (:type IS NULL OR type = :type) AND id > :afterId
       ORDER BY id LIMIT :limit`,
    ),
    nthNewestEvent: db.prepare('SELECT id FROM events WHERE app_id = :appId ORDER BY id DESC LIMIT 1 OFFSET :keep'),
    trimAppEvents: db.prepare(
      `DELETE FROM events WHERE id IN
         (SELECT id FROM events WHERE app_id = :appId AND id <= :lastId ORDER BY id LIMIT :batch)`,
    ),
    deleteOldEvents: db.prepare(
      // Ids grow with time, so the oldest events are the first ids.
      'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < :cutoff ORDER BY id LIMIT :batch)',
    ),
    // A batch in one statement (see insertEvents): the rows as a JSON array, the bytes as hex.
    insertTokens: db.prepare(
      `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
       SELECT unhex(value ->> 0), unhex(value ->> 1), value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(:batch)`,
    ),
    insertToken: db.prepare(
      `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
       VALUES (:selector, :verifierHash, :appId, :kind, :issuedAt, :expiresAt)`,
    ),
    findToken: db.prepare('SELECT verifier_hash, app_id, kind, issued_at, expires_at FROM tokens WHERE selector = :selector'),
    dataVersion: db.prepare('PRAGMA data_version'),
  };

  const deleteApp = db.transaction((appId: string): boolean => {
    statements.deleteAppTokens.run({ appId });
    statements.deleteAppEvents.run({ appId });
    return statements.deleteApp.run({ appId }).changes > 0;
  });

  const insertEvents = (batch: NewAuditEvent[]) => {
    if (batch.length === 0) return;
    const rows = batch.map((event) => [event.appId, event.type, event.at, event.principal, event.clientAddress, JSON.stringify(event.details)]);
    statements.insertEvents.run({ batch: JSON.stringify(rows) });
  };
  const deleteTokensOfApp = (appId: string, kind: RevocationKind): number =>
    (kind === 'all' ? statements.deleteAppTokens.run({ appId }) : statements.deleteAppTokensOfKind.run({ appId, kind })).changes;

  // An operator's or admin's change and its audit events: one transaction (libsql's wrapper rolls
  // back when a statement throws). IMMEDIATE takes the write lock before the first statement.
  const rotateClientSecret = db.transaction(
    (appId: string, hash: Buffer, revokeAdminTokens: boolean, audit: AuditOf<SecretRotation>): SecretRotation | undefined => {
      if (statements.updateSecret.run({ appId, hash }).changes === 0) return undefined;
      const rotation = { adminTokensRevoked: revokeAdminTokens ? deleteTokensOfApp(appId, 'admin') : 0 };
      insertEvents(audit(rotation));
      return rotation;
    },
  );
  const updateConfiguration = db.transaction(
    (appId: string, changes: Partial<AppConfiguration>, audit: AuditOf<AppRecord>): AppRecord | undefined => {
      const row = statements.updateConfiguration.get({ appId, changes: JSON.stringify(changes) }) as AppRow | undefined;
      if (row === undefined) return undefined;
      const updated = toApp(row);
      insertEvents(audit(updated));
      return updated;
    },
  );
  const deleteByApp = db.transaction((appId: string, kind: RevocationKind, audit: AuditOf<number>): number => {
    const count = deleteTokensOfApp(appId, kind);
    insertEvents(audit(count));
    return count;
  });

  const apps: AppStore = {
    async insert(app) {
      try {
        statements.insertApp.run({ ...app, configuration: JSON.stringify(app.configuration) });
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
    async rotateClientSecret(appId, hash, { revokeAdminTokens }, audit) {
      return rotateClientSecret.immediate(appId, hash, revokeAdminTokens, audit);
    },
    async updateConfiguration(appId, changes, audit) {
      return updateConfiguration.immediate(appId, changes, audit);
    },
    async delete(appId) {
      return deleteApp(appId);
    },
  };

  const insertTokens = (batch: TokenRecord[]) => {
    const rows = batch.map((token) => [
      token.selector.toString('hex'),
      token.verifierHash.toString('hex'),
      token.appId,
      token.kind,
      token.issuedAt,
      token.expiresAt,
    ]);
    statements.insertTokens.run({ batch: JSON.stringify(rows) });
  };
  const tokenWriter = new GroupCommit<TokenRecord>({
    writeBatch: (batch) => insertTokens(batch),
    writeOne: (token) => void statements.insertToken.run(token),
  });

  const tokens: TokenStore = {
    insert(token) {
      return tokenWriter.add(token);
    },
    async findBySelector(selector) {
      const row = statements.findToken.get({ selector }) as TokenRow | undefined;
      if (row === undefined) return undefined;
      return {
        selector,
        verifierHash: row.verifier_hash,
        appId: row.app_id,
        kind: row.kind,
        issuedAt: row.issued_at,
        expiresAt: row.expires_at,
      };
    },
    async delete(selector) {
      return statements.deleteToken.run({ selector }).changes > 0;
    },
    async deleteByApp(appId, kind, audit) {
      return deleteByApp.immediate(appId, kind, audit);
    },
    async deleteExpired(now, batch) {
      return statements.deleteExpiredTokens.run({ now, batch }).changes;
    },
  };

  const events: EventStore = {
    async append(batch) {
      insertEvents(batch);
    },
    async list({ appId, type, beforeId, afterId, limit }) {
      const rows =
        afterId === undefined
          ? statements.listEvents.all({ appId, type: type ?? null, beforeId: beforeId ?? Number.MAX_SAFE_INTEGER, limit })
          : statements.listEventsAfter.all({ appId, type: type ?? null, afterId, limit });
      return (rows as EventRow[]).map(toEvent);
    },
    async trimApp(appId, keep, batch) {
      const last = statements.nthNewestEvent.get({ appId, keep }) as { id: number } | undefined;
      if (last === undefined) return 0;
      return statements.trimAppEvents.run({ appId, lastId: last.id, batch }).changes;
    },
    async deleteOlderThan(cutoff, batch) {
      return statements.deleteOldEvents.run({ cutoff, batch }).changes;
    },
  };

  // `PRAGMA data_version` changes when another connection commits: polling it is how this process
  // learns, within one poll interval, that the CLI or another instance changed something.
  const listeners: ((appId?: string) => void)[] = [];
  const dataVersion = () => (statements.dataVersion.get() as { data_version: number }).data_version;
  let seenVersion = dataVersion();
  const poll = setInterval(() => {
    const version = dataVersion();
    if (version === seenVersion) return;
    seenVersion = version;
    for (const listener of listeners) listener();
  }, options.changePollIntervalMs ?? 250);
  poll.unref();

  return {
    backend: 'sqlite',
    apps,
    tokens,
    events,
    onChange(listener) {
      listeners.push(listener);
    },
    async ping() {
      db.prepare('SELECT 1').get();
    },
    async close() {
      if (!db.open) return;
      clearInterval(poll);
      await tokenWriter.drain();
      if (!db.open) return;
      // The driver lets go of the file only once its statements are garbage-collected: move the
      // write-ahead log into the database now, so that the file is complete whenever that happens.
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  };
}

function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT');
  // IMMEDIATE takes the write lock first, so processes starting together apply each step once.
  const applyPending = db.transaction(() => {
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    for (const migration of SQLITE_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (:version, :appliedAt)').run({
        version: migration.version,
        appliedAt: Date.now(),
      });
    }
  });
  applyPending.immediate();
}

function retryWhileBusy(step: () => void, timeoutMs = 10_000): void {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return step();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || Date.now() > deadline) throw error;
      // Opening only: a short synchronous pause before the next try.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.random() * 40);
    }
  }
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
  };
}

function toEvent(row: EventRow): AuditEvent {
  return {
    id: row.id,
    appId: row.app_id,
    type: row.type,
    at: row.at,
    principal: row.principal,
    clientAddress: row.client_address,
    details: JSON.parse(row.details) as AuditEvent['details'],
  };
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed|PRIMARY KEY/i.test(error.message);
}
