import type { EventCount } from '../../events/counts.js';
import type { AuditEvent, NewAuditEvent } from '../../events/event.js';
import type { EventClass } from '../../events/retention.js';
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

interface CountRow {
  bucket: number;
  type: EventCount['type'];
  principal: string;
  reason: string;
  count: number;
}

/**
 * The rows of each class (`src/events/retention.ts`), told apart by type. Each condition is written
 * out in the statements that use it, exactly as in its partial index (migration 4), so that SQLite
 * uses that index.
 */
const CLASS_CONDITION: Record<EventClass, string> = {
  audit: "type <> 'token.refused'",
  refusal: "type = 'token.refused'",
};

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
  const deleteAppCounts = db.prepare('DELETE FROM event_counts WHERE app_id = :appId');
  return {
    insert(batch) {
      if (batch.length === 0) return;
      const rows = batch.map((event) => [event.appId, event.type, event.at, event.principal, event.clientAddress, JSON.stringify(event.details)]);
      insertEvents.run({ batch: JSON.stringify(rows) });
    },
    deleteOfApp(appId) {
      deleteAppEvents.run({ appId });
      deleteAppCounts.run({ appId });
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
    trim: { audit: trimStatements(db, CLASS_CONDITION.audit), refusal: trimStatements(db, CLASS_CONDITION.refusal) },
    deleteOldEvents: db.prepare(
      // Ids grow with time, so the oldest events are the first ids.
      'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < :cutoff ORDER BY id LIMIT :batch)',
    ),
    // A whole batch in one statement, as a JSON array of rows. (`WHERE true` tells SQLite's parser
    // that ON CONFLICT belongs to the INSERT, not to a join.)
    addCounts: db.prepare(
      `INSERT INTO event_counts (app_id, bucket, type, principal, reason, count)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(:batch) WHERE true
       ON CONFLICT (app_id, bucket, type, principal, reason) DO UPDATE SET count = count + excluded.count`,
    ),
    listCounts: db.prepare(
      `SELECT bucket - bucket % :bucketMs AS bucket, type, principal, reason, sum(count) AS count FROM event_counts
       WHERE app_id = :appId AND bucket >= :since AND bucket < :until AND (:type IS NULL OR type = :type)
       GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    ),
    deleteOldCounts: db.prepare(
      `DELETE FROM event_counts WHERE (app_id, bucket, type, principal, reason) IN
         (SELECT app_id, bucket, type, principal, reason FROM event_counts WHERE bucket < :cutoff LIMIT :batch)`,
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
    async trimApp(appId, eventClass, keep, batch) {
      const trim = statements.trim[eventClass];
      const last = trim.nthNewest.get({ appId, keep }) as { id: number } | undefined;
      if (last === undefined) return 0;
      return trim.deleteUpTo.run({ appId, lastId: last.id, batch }).changes;
    },
    async deleteOlderThan(cutoff, batch) {
      return statements.deleteOldEvents.run({ cutoff, batch }).changes;
    },
    async addCounts(counts) {
      if (counts.length === 0) return;
      const rows = counts.map((count) => [count.appId, count.bucket, count.type, count.principal ?? '', count.reason ?? '', count.count]);
      statements.addCounts.run({ batch: JSON.stringify(rows) });
    },
    async listCounts({ appId, bucketMs, since, until, type }) {
      const rows = statements.listCounts.all({ appId, bucketMs, since, until, type: type ?? null }) as CountRow[];
      return rows.map((row) => ({
        appId,
        bucket: row.bucket,
        type: row.type,
        principal: row.principal === '' ? null : (row.principal as EventCount['principal']),
        reason: row.reason === '' ? null : row.reason,
        count: row.count,
      }));
    },
    async deleteCountsOlderThan(cutoff, batch) {
      return statements.deleteOldCounts.run({ cutoff, batch }).changes;
    },
  };
}

/** Finding the newest event of a class to keep, and deleting the older ones of the class. */
function trimStatements(db: SqliteDatabase, condition: string) {
  return {
    nthNewest: db.prepare(`SELECT id FROM events WHERE app_id = :appId AND ${condition} ORDER BY id DESC LIMIT 1 OFFSET :keep`),
    deleteUpTo: db.prepare(
      `DELETE FROM events WHERE id IN
         (SELECT id FROM events WHERE app_id = :appId AND ${condition} AND id <= :lastId ORDER BY id LIMIT :batch)`,
    ),
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
