import type { DeveloperRecord } from '../../developers/developer.js';
import type { OneTimeLinkRecord } from '../../developers/one-time-link.js';
import { MAX_EVENTS_PER_DEVELOPER, type AccountAudit, type DeveloperEvent, type NewDeveloperEvent } from '../../developers/events.js';
import { DeveloperConflictError, type DeveloperAccountStore, type DeveloperStore } from '../../developers/store.js';
import { sqliteAppMemberStore } from './app-members.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';
import { sqliteDeveloperSessionStore } from './developer-sessions.js';
import { isUniqueViolation } from './errors.js';
import type { SqliteEventWrites } from './events.js';
import { prepareLinkWrites, sqliteOneTimeLinkStore, type SqliteLinkWrites } from './one-time-links.js';

interface DeveloperRow {
  id: string;
  email: string;
  password_hash: string | null;
  created_at: number;
  disabled_at: number | null;
}

interface DeveloperEventRow {
  id: number;
  developer_id: string;
  type: DeveloperEvent['type'];
  at: number;
  actor: DeveloperEvent['actor'];
  client_address: string | null;
  details: string;
}

/** Writes events of developers' account logs, in the transaction of the change they describe. */
export type SqliteDeveloperEventWrites = (batch: NewDeveloperEvent[]) => void;

/** Writes the events of an account change (`AccountAudit`) in the change's transaction. */
export type SqliteAccountAuditWrites = (audit: AccountAudit) => void;

export function prepareDeveloperEventWrites(db: SqliteDatabase): SqliteDeveloperEventWrites {
  const insertEvent = db.prepare(
    `INSERT INTO developer_events (developer_id, type, at, actor, client_address, details)
     VALUES (:developerId, :type, :at, :actor, :clientAddress, :details)`,
  );
  const nthNewestEvent = db.prepare('SELECT id FROM developer_events WHERE developer_id = :developerId ORDER BY id DESC LIMIT 1 OFFSET :keep');
  const deleteEventsUpTo = db.prepare('DELETE FROM developer_events WHERE developer_id = :developerId AND id <= :lastId');
  return (batch) => {
    for (const event of batch) insertEvent.run({ ...event, details: JSON.stringify(event.details) });
    // A developer can cause any number of sign-ins: each keeps its newest events only.
    for (const developerId of new Set(batch.map((event) => event.developerId))) {
      const last = nthNewestEvent.get({ developerId, keep: MAX_EVENTS_PER_DEVELOPER }) as { id: number } | undefined;
      if (last !== undefined) deleteEventsUpTo.run({ developerId, lastId: last.id });
    }
  };
}

/**
 * Developer accounts, their sessions and links, and app memberships: one file per table
 * (`developers.ts` for accounts and their events, `developer-sessions.ts`, `one-time-links.ts`,
 * `app-members.ts`), put together here.
 */
export function sqliteDeveloperStore(db: SqliteDatabase, events: SqliteEventWrites, developerEvents: SqliteDeveloperEventWrites): DeveloperStore {
  const audit: SqliteAccountAuditWrites = ({ developer = [], app = [] }) => {
    developerEvents(developer);
    events.insert(app);
  };
  const links = prepareLinkWrites(db);
  return {
    accounts: sqliteDeveloperAccountStore(db, audit, links),
    sessions: sqliteDeveloperSessionStore(db, audit),
    links: sqliteOneTimeLinkStore(db, audit, links),
    members: sqliteAppMemberStore(db, audit),
  };
}

function sqliteDeveloperAccountStore(db: SqliteDatabase, audit: SqliteAccountAuditWrites, links: SqliteLinkWrites): DeveloperAccountStore {
  const statements = {
    insert: db.prepare(
      `INSERT INTO developers (id, email, password_hash, created_at, disabled_at)
       VALUES (:id, :email, :passwordHash, :createdAt, :disabledAt)`,
    ),
    findById: db.prepare('SELECT * FROM developers WHERE id = :id'),
    findByEmail: db.prepare('SELECT * FROM developers WHERE email = :email'),
    list: db.prepare('SELECT * FROM developers ORDER BY created_at, id'),
    setPassword: db.prepare('UPDATE developers SET password_hash = :passwordHash WHERE id = :id AND disabled_at IS NULL'),
    rehash: db.prepare('UPDATE developers SET password_hash = :passwordHash WHERE id = :id AND password_hash = :previousHash'),
    disable: db.prepare('UPDATE developers SET disabled_at = :at WHERE id = :id AND disabled_at IS NULL'),
    delete: db.prepare('DELETE FROM developers WHERE id = :id'),
    deleteSessions: db.prepare('DELETE FROM developer_sessions WHERE developer_id = :developerId'),
    deletePasswordLink: db.prepare("DELETE FROM one_time_links WHERE id = :id AND developer_id = :developerId AND purpose <> 'invitation'"),
    listEvents: db.prepare('SELECT * FROM developer_events WHERE developer_id = :developerId ORDER BY id DESC LIMIT :limit'),
    deleteOldEvents: db.prepare(
      // Ids grow with time, so the oldest events are the first ids.
      'DELETE FROM developer_events WHERE id IN (SELECT id FROM developer_events WHERE at < :cutoff ORDER BY id LIMIT :batch)',
    ),
  };

  const insert = immediateTransaction(db, (developer: DeveloperRecord, link: OneTimeLinkRecord | null, events: AccountAudit) => {
    statements.insert.run({ ...developer });
    if (link !== null) links.insert(link);
    audit(events);
  });
  const setPassword = immediateTransaction(
    db,
    (developerId: string, passwordHash: string, linkId: string | null, events: Parameters<DeveloperAccountStore['setPassword']>[3]) => {
      if (linkId !== null && statements.deletePasswordLink.run({ id: linkId, developerId }).changes === 0) return undefined;
      if (statements.setPassword.run({ id: developerId, passwordHash }).changes === 0) throw new RolledBack();
      const result = { sessionsEnded: statements.deleteSessions.run({ developerId }).changes };
      links.deletePasswordLinksOf(developerId);
      audit(events(result));
      return result;
    },
  );
  const appendEvents = immediateTransaction(db, (batch: NewDeveloperEvent[]) => audit({ developer: batch }));
  const disable = immediateTransaction(db, (developerId: string, at: number, events: Parameters<DeveloperAccountStore['disable']>[2]) => {
    if (statements.disable.run({ id: developerId, at }).changes === 0) return undefined;
    const result = { sessionsEnded: statements.deleteSessions.run({ developerId }).changes };
    links.deletePasswordLinksOf(developerId);
    audit(events(result));
    return result;
  });

  return {
    async insert(developer, link, events) {
      try {
        insert(developer, link, events());
      } catch (error) {
        if (isUniqueViolation(error)) throw new DeveloperConflictError();
        throw error;
      }
    },
    async findById(id) {
      return toDeveloper(statements.findById.get({ id }) as DeveloperRow | undefined);
    },
    async findByEmail(email) {
      return toDeveloper(statements.findByEmail.get({ email }) as DeveloperRow | undefined);
    },
    async list() {
      return (statements.list.all() as DeveloperRow[]).map((row) => toDeveloper(row)!);
    },
    async setPassword(developerId, passwordHash, { linkId }, events) {
      try {
        return setPassword(developerId, passwordHash, linkId, events);
      } catch (error) {
        if (error instanceof RolledBack) return undefined;
        throw error;
      }
    },
    async rehashPassword(developerId, previousHash, passwordHash) {
      return statements.rehash.run({ id: developerId, previousHash, passwordHash }).changes > 0;
    },
    async disable(developerId, at, events) {
      return disable(developerId, at, events);
    },
    async delete(developerId) {
      return statements.delete.run({ id: developerId }).changes > 0;
    },
    async appendEvents(batch) {
      appendEvents(batch);
    },
    async listEvents(developerId, limit) {
      return (statements.listEvents.all({ developerId, limit }) as DeveloperEventRow[]).map(toDeveloperEvent);
    },
    async deleteEventsOlderThan(cutoff, batch) {
      return statements.deleteOldEvents.run({ cutoff, batch }).changes;
    },
  };
}

/** Thrown inside a transaction to undo what it wrote so far; caught outside it. */
class RolledBack extends Error {}

function toDeveloper(row: DeveloperRow | undefined): DeveloperRecord | undefined {
  if (row === undefined) return undefined;
  return { id: row.id, email: row.email, passwordHash: row.password_hash, createdAt: row.created_at, disabledAt: row.disabled_at };
}

function toDeveloperEvent(row: DeveloperEventRow): DeveloperEvent {
  return {
    id: row.id,
    developerId: row.developer_id,
    type: row.type,
    at: row.at,
    actor: row.actor,
    clientAddress: row.client_address,
    details: JSON.parse(row.details) as DeveloperEvent['details'],
  };
}
