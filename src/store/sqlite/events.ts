import type { AuditEvent, NewAuditEvent } from '../../events/event.js';
import type { EventStore } from '../../events/store.js';
import type { SqliteDatabase } from './connection.js';

interface EventRow {
  id: number;
  app_id: string;
  type: AuditEvent['type'];
  at: number;
  principal: AuditEvent['principal'];
  client_address: string | null;
  details: string;
}

/** The writes to the events table that the other tables' transactions make too. */
export interface SqliteEventWrites {
  insert(batch: NewAuditEvent[]): void;
  deleteOfApp(appId: string): void;
}

export function prepareEventWrites(db: SqliteDatabase): SqliteEventWrites {
  // A whole batch in one statement, as a JSON array of rows: half the cost of a statement per
  // event, which the token endpoint pays for every token.issued.
  const insertEvents = db.prepare(
    `INSERT INTO events (app_id, type, at, principal, client_address, details)
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(:batch)`,
  );
  const deleteAppEvents = db.prepare('DELETE FROM events WHERE app_id = :appId');
  return {
    insert(batch) {
      if (batch.length === 0) return;
      const rows = batch.map((event) => [event.appId, event.type, event.at, event.principal, event.clientAddress, JSON.stringify(event.details)]);
      insertEvents.run({ batch: JSON.stringify(rows) });
    },
    deleteOfApp(appId) {
      deleteAppEvents.run({ appId });
    },
  };
}

export function sqliteEventStore(db: SqliteDatabase, writes: SqliteEventWrites): EventStore {
  const statements = {
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
  };

  return {
    async append(batch) {
      writes.insert(batch);
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
