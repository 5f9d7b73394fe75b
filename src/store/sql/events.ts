import type { EventCount } from '../../events/counts.js';
import type { AuditEvent, NewAuditEvent } from '../../events/event.js';
import type { EventClass } from '../../events/retention.js';
import type { EventStore } from '../../events/store.js';
import { batchInsert } from './batch.js';
import { jsonColumn } from './rows.js';
import type { SqlRunner } from './runner.js';

interface EventRow {
  id: number;
  app_id: string;
  type: AuditEvent['type'];
  at: number;
  principal: AuditEvent['principal'];
  client_address: string | null;
  details: unknown;
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
 * out in the statements that use it, exactly as in its partial index (migration 4), so that the
 * database uses that index.
 */
const CLASS_CONDITION: Record<EventClass, string> = {
  audit: "type <> 'token.refused'",
  refusal: "type = 'token.refused'",
};

const EVENT_COLUMNS = 'id, app_id, type, at, principal, client_address, details';

const insertEventBatch = batchInsert('events', [
  ['app_id', 'text'],
  ['type', 'text'],
  ['at', 'bigint'],
  ['principal', 'text'],
  ['client_address', 'text'],
  ['details', 'json'],
]);

const addCountBatch = batchInsert(
  'event_counts',
  [
    ['app_id', 'text'],
    ['bucket', 'bigint'],
    ['type', 'text'],
    ['principal', 'text'],
    ['reason', 'text'],
    ['count', 'bigint'],
  ],
  'ON CONFLICT (app_id, bucket, type, principal, reason) DO UPDATE SET count = event_counts.count + excluded.count',
);

/**
 * Writes a batch of events in one statement. A change's audit events are written so in the change's
 * own transaction: both are written, or neither.
 */
export async function insertEvents(db: SqlRunner, batch: readonly NewAuditEvent[]): Promise<void> {
  if (batch.length === 0) return;
  const rows = batch.map(
    (event) => [event.appId, event.type, event.at, event.principal, event.clientAddress, JSON.stringify(event.details)] as const,
  );
  await db.run(insertEventBatch.statement, insertEventBatch.params(db.dialect, rows));
}

/** Deletes the app's events and counts, in the transaction that deletes the app. */
export async function deleteEventsOfApp(tx: SqlRunner, appId: string): Promise<void> {
  await tx.run('DELETE FROM events WHERE app_id = :appId', { appId });
  await tx.run('DELETE FROM event_counts WHERE app_id = :appId', { appId });
}

export function sqlEventStore(db: SqlRunner): EventStore {
  return {
    async append(batch) {
      await insertEvents(db, batch);
    },
    async list({ appId, type, beforeId, afterId, limit }) {
      const ofType = '(CAST(:type AS TEXT) IS NULL OR type = :type)';
      const rows =
        afterId === undefined
          ? await db.all<EventRow>(
              `SELECT ${EVENT_COLUMNS} FROM events WHERE app_id = :appId AND ${ofType} AND id < :beforeId ORDER BY id DESC LIMIT :limit`,
              { appId, type, beforeId: beforeId ?? Number.MAX_SAFE_INTEGER, limit },
            )
          : await db.all<EventRow>(
              `SELECT ${EVENT_COLUMNS} FROM events WHERE app_id = :appId AND ${ofType} AND id > :afterId ORDER BY id LIMIT :limit`,
              { appId, type, afterId, limit },
            );
      return rows.map(toEvent);
    },
    async trimApp(appId, eventClass, keep, batch) {
      const condition = CLASS_CONDITION[eventClass];
      return db.run(
        `DELETE FROM events WHERE id IN
           (SELECT id FROM events WHERE app_id = :appId AND ${condition} AND id <=
              (SELECT id FROM events WHERE app_id = :appId AND ${condition} ORDER BY id DESC LIMIT 1 OFFSET :keep)
            ORDER BY id LIMIT :batch)`,
        { appId, keep, batch },
      );
    },
    async deleteOlderThan(cutoff, batch) {
      // Ids grow with time, so the oldest events are the first ids.
      return db.run('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < :cutoff ORDER BY id LIMIT :batch)', {
        cutoff,
        batch,
      });
    },
    async addCounts(counts) {
      if (counts.length === 0) return;
      const rows = counts.map(
        (count) => [count.appId, count.bucket, count.type, count.principal ?? '', count.reason ?? '', count.count] as const,
      );
      await db.run(addCountBatch.statement, addCountBatch.params(db.dialect, rows));
    },
    async listCounts({ appId, bucketMs, since, until, type }) {
      const rows = await db.all<CountRow>(
        `SELECT bucket - bucket % :bucketMs AS bucket, type, principal, reason, sum(count) AS count FROM event_counts
         WHERE app_id = :appId AND bucket >= :since AND bucket < :until AND (CAST(:type AS TEXT) IS NULL OR type = :type)
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
        { appId, bucketMs, since, until, type },
      );
      return rows.map((row) => ({
        appId,
        bucket: Number(row.bucket),
        type: row.type,
        principal: row.principal === '' ? null : (row.principal as EventCount['principal']),
        reason: row.reason === '' ? null : row.reason,
        count: Number(row.count),
      }));
    },
    async deleteCountsOlderThan(cutoff, batch) {
      return db.run(
        {
          sqlite: `DELETE FROM event_counts WHERE (app_id, bucket, type, principal, reason) IN
                     (SELECT app_id, bucket, type, principal, reason FROM event_counts WHERE bucket < :cutoff LIMIT :batch)`,
          // SKIP LOCKED: instances running housekeeping at once take different rows.
          postgres: `DELETE FROM event_counts WHERE ctid = ANY (ARRAY
                       (SELECT ctid FROM event_counts WHERE bucket < :cutoff LIMIT :batch FOR UPDATE SKIP LOCKED))`,
        },
        { cutoff, batch },
      );
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
    details: jsonColumn<AuditEvent['details']>(row.details),
  };
}
