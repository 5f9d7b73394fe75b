import type pg from 'pg';
import type { EventCount } from '../../events/counts.js';
import type { AuditEvent, NewAuditEvent } from '../../events/event.js';
import type { EventClass } from '../../events/retention.js';
import type { EventStore } from '../../events/store.js';
import type { PostgresQueries } from './connection.js';

interface EventRow {
  id: string;
  app_id: string;
  type: AuditEvent['type'];
  at: string;
  principal: AuditEvent['principal'];
  client_address: string | null;
  details: AuditEvent['details'];
}

interface CountRow {
  bucket: string;
  type: EventCount['type'];
  principal: string;
  reason: string;
  count: string;
}

/**
 * The rows of each class (`src/events/retention.ts`), told apart by type. Each condition is written
 * out in the statements that use it, exactly as in its partial index (migration 4), so that the
 * planner can use that index.
 */
const CLASS_CONDITION: Record<EventClass, string> = {
  audit: "type <> 'token.refused'",
  refusal: "type = 'token.refused'",
};

/**
 * An operator's or admin's change writes its audit events on the change's own connection, before
 * the COMMIT: both are written, or neither.
 */
export async function insertEvents(client: pg.PoolClient, batch: NewAuditEvent[]): Promise<void> {
  if (batch.length > 0) await client.query(insertEventsQuery(batch));
}

/** Deletes the app's events and counts, in the transaction that deletes the app. */
export async function deleteEventsOfApp(client: pg.PoolClient, appId: string): Promise<void> {
  await client.query('DELETE FROM events WHERE app_id = $1', [appId]);
  await client.query('DELETE FROM event_counts WHERE app_id = $1', [appId]);
}

export function postgresEventStore(db: PostgresQueries): EventStore {
  return {
    async append(batch) {
      await db.query(insertEventsQuery(batch));
    },
    async list({ appId, type, beforeId, afterId, limit }) {
      const result =
        afterId === undefined
          ? await db.query<EventRow>({
              name: 'tessera-list-events',
              text: `SELECT * FROM events WHERE app_id = $1 AND ($2::text IS NULL OR type = $2) AND id < $3
                     ORDER BY id DESC LIMIT $4`,
              values: [appId, type ?? null, beforeId ?? Number.MAX_SAFE_INTEGER, limit],
            })
          : await db.query<EventRow>({
              name: 'tessera-list-events-after',
              text: `SELECT * FROM events WHERE app_id = $1 AND ($2::text IS NULL OR type = $2) AND id > $3
                     ORDER BY id LIMIT $4`,
              values: [appId, type ?? null, afterId, limit],
            });
      return result.rows.map(toEvent);
    },
    async trimApp(appId, eventClass, keep, batch) {
      const condition = CLASS_CONDITION[eventClass];
      const result = await db.query({
        text: `DELETE FROM events WHERE id IN
                 (SELECT id FROM events WHERE app_id = $1 AND ${condition} AND id <=
                    (SELECT id FROM events WHERE app_id = $1 AND ${condition} ORDER BY id DESC LIMIT 1 OFFSET $2)
                  ORDER BY id LIMIT $3)`,
        values: [appId, keep, batch],
      });
      return result.rowCount ?? 0;
    },
    async deleteOlderThan(cutoff, batch) {
      const result = await db.query({
        text: 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < $1 ORDER BY id LIMIT $2)',
        values: [cutoff, batch],
      });
      return result.rowCount ?? 0;
    },
    async addCounts(counts) {
      if (counts.length === 0) return;
      await db.query({
        name: 'tessera-add-event-counts',
        text: `INSERT INTO event_counts (app_id, bucket, type, principal, reason, count)
               SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[])
               ON CONFLICT (app_id, bucket, type, principal, reason) DO UPDATE SET count = event_counts.count + EXCLUDED.count`,
        values: [
          counts.map((count) => count.appId),
          counts.map((count) => count.bucket),
          counts.map((count) => count.type),
          counts.map((count) => count.principal ?? ''),
          counts.map((count) => count.reason ?? ''),
          counts.map((count) => count.count),
        ],
      });
    },
    async listCounts({ appId, bucketMs, since, until, type }) {
      const result = await db.query<CountRow>({
        name: 'tessera-list-event-counts',
        text: `SELECT bucket - bucket % $2 AS bucket, type, principal, reason, sum(count) AS count FROM event_counts
               WHERE app_id = $1 AND bucket >= $3 AND bucket < $4 AND ($5::text IS NULL OR type = $5)
               GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
        values: [appId, bucketMs, since, until, type ?? null],
      });
      return result.rows.map((row) => ({
        appId,
        bucket: Number(row.bucket),
        type: row.type,
        principal: row.principal === '' ? null : (row.principal as EventCount['principal']),
        reason: row.reason === '' ? null : row.reason,
        count: Number(row.count),
      }));
    },
    async deleteCountsOlderThan(cutoff, batch) {
      // SKIP LOCKED: instances running housekeeping at once take different rows.
      const result = await db.query({
        text: `DELETE FROM event_counts WHERE ctid = ANY (ARRAY
                 (SELECT ctid FROM event_counts WHERE bucket < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`,
        values: [cutoff, batch],
      });
      return result.rowCount ?? 0;
    },
  };
}

/** A batch of events in one statement. */
function insertEventsQuery(batch: NewAuditEvent[]): pg.QueryConfig {
  return {
    name: 'tessera-insert-events',
    text: `INSERT INTO events (app_id, type, at, principal, client_address, details)
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::jsonb[])`,
    values: [
      batch.map((event) => event.appId),
      batch.map((event) => event.type),
      batch.map((event) => event.at),
      batch.map((event) => event.principal),
      batch.map((event) => event.clientAddress),
      batch.map((event) => JSON.stringify(event.details)),
    ],
  };
}

function toEvent(row: EventRow): AuditEvent {
  return {
    id: Number(row.id),
    appId: row.app_id,
    type: row.type,
    at: Number(row.at),
    principal: row.principal,
    clientAddress: row.client_address,
    details: row.details,
  };
}
