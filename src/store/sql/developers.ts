import type { DeveloperRecord } from '../../developers/developer.js';
import type { DeveloperEvent } from '../../developers/events.js';
import type { DeveloperAccountStore, DeveloperStore } from '../../developers/store.js';
import { sqlAppMemberStore } from './app-members.js';
import { insertDeveloperEvents } from './developer-events.js';
import { sqlDeveloperSessionStore } from './developer-sessions.js';
import { deletePasswordLinksOf, sqlOneTimeLinkStore } from './one-time-links.js';
import { jsonColumn } from 'tessera-tokens/internal/store/sql/rows.js';
import { withRowLock, type SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

interface DeveloperRow {
  id: string;
  email: string;
  password_hash: string | null;
  created_at: number;
  disabled_at: number | null;
  email_confirmed_at: number | null;
}

interface DeveloperEventRow {
  id: number;
  developer_id: string;
  type: DeveloperEvent['type'];
  at: number;
  actor: DeveloperEvent['actor'];
  client_address: string | null;
  details: unknown;
}

const COLUMNS = 'id, email, password_hash, created_at, disabled_at, email_confirmed_at';

const LOCK_ENABLED = {
  'NO KEY UPDATE': withRowLock('SELECT 1 AS found FROM developers WHERE id = :developerId AND disabled_at IS NULL', 'NO KEY UPDATE'),
  SHARE: withRowLock('SELECT 1 AS found FROM developers WHERE id = :developerId AND disabled_at IS NULL', 'SHARE'),
};
const EVENT_COLUMNS = 'id, developer_id, type, at, actor, client_address, details';

/**
 * Developer accounts, their sessions and links, and app memberships: one file per table
 * (`developers.ts` for accounts, `developer-events.ts` for their events, `developer-sessions.ts`,
 * `one-time-links.ts`, `app-members.ts`), put together here.
 */
export function sqlDeveloperStore(db: SqlRunner): DeveloperStore {
  return {
    accounts: sqlDeveloperAccountStore(db),
    sessions: sqlDeveloperSessionStore(db),
    links: sqlOneTimeLinkStore(db),
    members: sqlAppMemberStore(db),
  };
}

function sqlDeveloperAccountStore(db: SqlRunner): DeveloperAccountStore {
  /** Ends every session of the developer and removes its password links; how many sessions ended. */
  const signOut = async (tx: SqlRunner, developerId: string) => {
    const sessionsEnded = await tx.run('DELETE FROM developer_sessions WHERE developer_id = :developerId', { developerId });
    await deletePasswordLinksOf(tx, developerId);
    return { sessionsEnded };
  };
  return {
    async insert(developer) {
      await db.run(`INSERT INTO developers (${COLUMNS}) VALUES (:id, :email, :passwordHash, :createdAt, :disabledAt, :emailConfirmedAt)`, {
        ...developer,
      });
    },
    async findById(id) {
      return toDeveloper(await db.get<DeveloperRow>(`SELECT ${COLUMNS} FROM developers WHERE id = :id`, { id }));
    },
    async lockEnabled(developerId, mode) {
      return (await db.get(LOCK_ENABLED[mode], { developerId })) === undefined ? undefined : true;
    },
    async findByEmail(email) {
      return toDeveloper(await db.get<DeveloperRow>(`SELECT ${COLUMNS} FROM developers WHERE email = :email`, { email }));
    },
    async list() {
      return (await db.all<DeveloperRow>(`SELECT ${COLUMNS} FROM developers ORDER BY created_at, id`)).map((row) => toDeveloper(row)!);
    },
    async setPassword(developerId, passwordHash) {
      return db.transaction(async (tx) => {
        const updated = await tx.run(
          'UPDATE developers SET password_hash = :passwordHash WHERE id = :developerId AND disabled_at IS NULL',
          {
            developerId,
            passwordHash,
          },
        );
        return updated === 0 ? undefined : signOut(tx, developerId);
      });
    },
    async rehashPassword(developerId, previousHash, passwordHash) {
      const updated = await db.run(
        'UPDATE developers SET password_hash = :passwordHash WHERE id = :developerId AND password_hash = :previousHash',
        {
          developerId,
          previousHash,
          passwordHash,
        },
      );
      return updated > 0 ? true : undefined;
    },
    async disable(developerId, at) {
      return db.transaction(async (tx) => {
        const updated = await tx.run('UPDATE developers SET disabled_at = :at WHERE id = :developerId AND disabled_at IS NULL', {
          developerId,
          at,
        });
        return updated === 0 ? undefined : signOut(tx, developerId);
      });
    },
    async delete(developerId) {
      return (await db.run('DELETE FROM developers WHERE id = :developerId', { developerId })) > 0 ? true : undefined;
    },
    async appendEvents(batch) {
      await db.transaction((tx) => insertDeveloperEvents(tx, batch));
    },
    async listEvents(developerId, limit) {
      const rows = await db.all<DeveloperEventRow>(
        `SELECT ${EVENT_COLUMNS} FROM developer_events WHERE developer_id = :developerId ORDER BY id DESC LIMIT :limit`,
        { developerId, limit },
      );
      return rows.map(toDeveloperEvent);
    },
    async deleteEventsOlderThan(cutoff, batch) {
      // Ids grow with time, so the oldest events are the first ids.
      return db.run(
        'DELETE FROM developer_events WHERE id IN (SELECT id FROM developer_events WHERE at < :cutoff ORDER BY id LIMIT :batch)',
        {
          cutoff,
          batch,
        },
      );
    },
  };
}

function toDeveloper(row: DeveloperRow | undefined): DeveloperRecord | undefined {
  if (row === undefined) return undefined;
  return {
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    emailConfirmedAt: row.email_confirmed_at,
  };
}

function toDeveloperEvent(row: DeveloperEventRow): DeveloperEvent {
  return {
    id: row.id,
    developerId: row.developer_id,
    type: row.type,
    at: row.at,
    actor: row.actor,
    clientAddress: row.client_address,
    details: jsonColumn<DeveloperEvent['details']>(row.details),
  };
}
