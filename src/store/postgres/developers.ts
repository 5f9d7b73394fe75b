import type pg from 'pg';
import type { DeveloperRecord } from '../../developers/developer.js';
import { MAX_EVENTS_PER_DEVELOPER, type AccountAudit, type DeveloperEvent, type NewDeveloperEvent } from '../../developers/events.js';
import { DeveloperConflictError, type DeveloperAccountStore, type DeveloperStore } from '../../developers/store.js';
import { postgresAppMemberStore } from './app-members.js';
import type { PostgresQueries } from './connection.js';
import { postgresDeveloperSessionStore } from './developer-sessions.js';
import { isUniqueViolation } from './errors.js';
import { insertEvents } from './events.js';
import { deletePasswordLinksOf, insertLink, postgresOneTimeLinkStore } from './one-time-links.js';

interface DeveloperRow {
  id: string;
  email: string;
  password_hash: string | null;
  created_at: string;
  disabled_at: string | null;
}

interface DeveloperEventRow {
  id: string;
  developer_id: string;
  type: DeveloperEvent['type'];
  at: string;
  actor: DeveloperEvent['actor'];
  client_address: string | null;
  details: DeveloperEvent['details'];
}

/** Writes the events of an account change (`AccountAudit`) on the change's own connection, before its COMMIT. */
export async function writeAccountAudit(client: pg.PoolClient, { developer = [], app = [] }: AccountAudit): Promise<void> {
  await insertDeveloperEvents(client, developer);
  await insertEvents(client, app);
}

/** Writes events of developers' account logs on the connection of the change they describe, before its COMMIT. */
export async function insertDeveloperEvents(client: pg.PoolClient, batch: NewDeveloperEvent[]): Promise<void> {
  for (const event of batch) {
    await client.query({
      name: 'tessera-insert-developer-event',
      text: `INSERT INTO developer_events (developer_id, type, at, actor, client_address, details) VALUES ($1, $2, $3, $4, $5, $6)`,
      values: [event.developerId, event.type, event.at, event.actor, event.clientAddress, JSON.stringify(event.details)],
    });
  }
  // A developer can cause any number of sign-ins: each keeps its newest events only.
  for (const developerId of new Set(batch.map((event) => event.developerId))) {
    await client.query({
      name: 'tessera-trim-developer-events',
      text: `DELETE FROM developer_events WHERE developer_id = $1 AND id <=
               (SELECT id FROM developer_events WHERE developer_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
      values: [developerId, MAX_EVENTS_PER_DEVELOPER],
    });
  }
}

/** Thrown inside a transaction to undo what it wrote so far; caught outside it. */
class RolledBack extends Error {}

/**
 * Developer accounts, their sessions and links, and app memberships: one file per table
 * (`developers.ts` for accounts and their events, `developer-sessions.ts`, `one-time-links.ts`,
 * `app-members.ts`), put together here.
 */
export function postgresDeveloperStore(db: PostgresQueries): DeveloperStore {
  return {
    accounts: postgresDeveloperAccountStore(db),
    sessions: postgresDeveloperSessionStore(db),
    links: postgresOneTimeLinkStore(db),
    members: postgresAppMemberStore(db),
  };
}

function postgresDeveloperAccountStore(db: PostgresQueries): DeveloperAccountStore {
  const findOne = async (name: string, text: string, value: string) => {
    const result = await db.query<DeveloperRow>({ name, text, values: [value] });
    return toDeveloper(result.rows[0]);
  };
  return {
    async insert(developer, link, events) {
      try {
        await db.transaction(async (client) => {
          await client.query({
            name: 'tessera-insert-developer',
            text: 'INSERT INTO developers (id, email, password_hash, created_at, disabled_at) VALUES ($1, $2, $3, $4, $5)',
            values: [developer.id, developer.email, developer.passwordHash, developer.createdAt, developer.disabledAt],
          });
          if (link !== null) await insertLink(client, link);
          await writeAccountAudit(client, events());
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new DeveloperConflictError();
        throw error;
      }
    },
    async findById(id) {
      return findOne('tessera-find-developer', 'SELECT * FROM developers WHERE id = $1', id);
    },
    async findByEmail(email) {
      return findOne('tessera-find-developer-by-email', 'SELECT * FROM developers WHERE email = $1', email);
    },
    async list() {
      const result = await db.query<DeveloperRow>({ text: 'SELECT * FROM developers ORDER BY created_at, id' });
      return result.rows.map((row) => toDeveloper(row)!);
    },
    async setPassword(developerId, passwordHash, { linkId }, events) {
      try {
        return await db.transaction(async (client) => {
          if (linkId !== null) {
            const used = await client.query("DELETE FROM one_time_links WHERE id = $1 AND developer_id = $2 AND purpose <> 'invitation'", [linkId, developerId]);
            if ((used.rowCount ?? 0) === 0) return undefined;
          }
          const updated = await client.query('UPDATE developers SET password_hash = $2 WHERE id = $1 AND disabled_at IS NULL', [developerId, passwordHash]);
          if ((updated.rowCount ?? 0) === 0) throw new RolledBack();
          const ended = await client.query('DELETE FROM developer_sessions WHERE developer_id = $1', [developerId]);
          await deletePasswordLinksOf(client, developerId);
          const result = { sessionsEnded: ended.rowCount ?? 0 };
          await writeAccountAudit(client, events(result));
          return result;
        });
      } catch (error) {
        if (error instanceof RolledBack) return undefined;
        throw error;
      }
    },
    async rehashPassword(developerId, previousHash, passwordHash) {
      const result = await db.query({
        text: 'UPDATE developers SET password_hash = $3 WHERE id = $1 AND password_hash = $2',
        values: [developerId, previousHash, passwordHash],
      });
      return (result.rowCount ?? 0) > 0;
    },
    async disable(developerId, at, events) {
      return db.transaction(async (client) => {
        const updated = await client.query('UPDATE developers SET disabled_at = $2 WHERE id = $1 AND disabled_at IS NULL', [developerId, at]);
        if ((updated.rowCount ?? 0) === 0) return undefined;
        const ended = await client.query('DELETE FROM developer_sessions WHERE developer_id = $1', [developerId]);
        await deletePasswordLinksOf(client, developerId);
        const result = { sessionsEnded: ended.rowCount ?? 0 };
        await writeAccountAudit(client, events(result));
        return result;
      });
    },
    async delete(developerId) {
      const result = await db.query({ text: 'DELETE FROM developers WHERE id = $1', values: [developerId] });
      return (result.rowCount ?? 0) > 0;
    },
    async appendEvents(batch) {
      await db.transaction((client) => insertDeveloperEvents(client, batch));
    },
    async listEvents(developerId, limit) {
      const result = await db.query<DeveloperEventRow>({
        name: 'tessera-list-developer-events',
        text: 'SELECT * FROM developer_events WHERE developer_id = $1 ORDER BY id DESC LIMIT $2',
        values: [developerId, limit],
      });
      return result.rows.map(toDeveloperEvent);
    },
    async deleteEventsOlderThan(cutoff, batch) {
      const result = await db.query({
        // Ids grow with time, so the oldest events are the first ids.
        text: 'DELETE FROM developer_events WHERE id IN (SELECT id FROM developer_events WHERE at < $1 ORDER BY id LIMIT $2)',
        values: [cutoff, batch],
      });
      return result.rowCount ?? 0;
    },
  };
}

function toDeveloper(row: DeveloperRow | undefined): DeveloperRecord | undefined {
  if (row === undefined) return undefined;
  return {
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    createdAt: Number(row.created_at),
    disabledAt: row.disabled_at === null ? null : Number(row.disabled_at),
  };
}

function toDeveloperEvent(row: DeveloperEventRow): DeveloperEvent {
  return {
    id: Number(row.id),
    developerId: row.developer_id,
    type: row.type,
    at: Number(row.at),
    actor: row.actor,
    clientAddress: row.client_address,
    details: row.details,
  };
}
