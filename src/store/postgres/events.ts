import type pg from 'pg';
import type { AuditEvent, NewAuditEvent } from '../../events/event.js';
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

/**
 * An operator's or admin's change writes its audit events on the change's own connection, before
 * the COMMIT: both are written, or neither.
 */
export async function insertEvents(client: pg.PoolClient, batch: NewAuditEvent[]): Promise<void> {
  if (batch.length > 0) await client.query(insertEventsQuery(batch));
}

export async function deleteEventsOfApp(client: pg.PoolClient, appId: string): Promise<void> {
  await client.query('DELETE FROM events WHERE app_id = $1', [appId]);
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
    async trimApp(appId, keep, batch) {
      const result = await db.query({
        text: `DELETE FROM events WHERE id IN
                 (SELECT id FROM events WHERE app_id = $1 AND id <=
                    (SELECT id FROM events WHERE app_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)
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
