import type { EventCount } from '../../events/counts.js';
import type { AuditEvent, KeyedAuditEvent, NewAuditEvent } from '../../events/event.js';
import type { EventClass } from '../../events/retention.js';
import type { EventStore } from '../../events/store.js';
import { batchInsert } from './batch.js';
import { jsonColumn } from 'tessera-tokens/internal/store/sql/rows.js';
import type { SqlRunner, Statement } from 'tessera-tokens/internal/store/sql/runner.js';

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

/**
 * The rows of the index of changes (`events_changes_by_app`, migration 9): every type but token
 * traffic (`ChangeEventType`). Written out exactly as in the index, so that the database uses it.
 */
const CHANGE_CONDITION = "type NOT IN ('token.issued', 'token.revoked', 'token.refused')";

/**
 * What differs between the dialects in a list of events: a field of JSON (`details.reason`), and the
 * range of instants. PostgreSQL is given the range through a subquery, so that it plans without
 * its values: with them, it would take a narrow range for a few rows among the app's, read them all
 * and sort them, not knowing that the newest ids are the newest instants and that the app's index
 * of ids, read from the newest, finds a range of the last minutes at once.
 */
const DIALECT: Record<SqlRunner['dialect'], { reason: string; range: string }> = {
  sqlite: { reason: "json_extract(details, '$.reason')", range: 'at >= :since AND at < :until' },
  postgres: {
    reason: "details->>'reason'",
    range: 'at >= (SELECT CAST(:since AS BIGINT)) AND at < (SELECT CAST(:until AS BIGINT))',
  },
};

/**
 * An app's events by `EventFilter`, newest first below `:beforeId` or oldest first above `:afterId`.
 * The app's index of ids (`events_by_app`) gives the order and the limit ends the scan; the other
 * conditions are tested on the rows it passes, each one left out by a NULL (`:since` and `:until`
 * always bound). A filter that matches few of the app's rows reads all of them: the caps on an
 * app's rows (`EVENTS_MAX_PER_APP`, `EVENTS_MAX_REFUSALS_PER_APP`) bound it.
 */
function listStatement(order: 'newest first' | 'oldest first'): Statement {
  const text = ({ reason, range }: (typeof DIALECT)[keyof typeof DIALECT]) =>
    `SELECT ${EVENT_COLUMNS} FROM events
     WHERE app_id = :appId AND ${order === 'newest first' ? 'id < :beforeId AND id >= :atLeastId' : 'id > :afterId AND id <= :atMostId'}
       AND (CAST(:type AS TEXT) IS NULL OR type = :type)
       AND ${range}
       AND (CAST(:clientAddress AS TEXT) IS NULL OR client_address = :clientAddress)
       AND (CAST(:reason AS TEXT) IS NULL OR ${reason} = :reason)
     ORDER BY id${order === 'newest first' ? ' DESC' : ''} LIMIT :limit`;
  return { sqlite: text(DIALECT.sqlite), postgres: text(DIALECT.postgres) };
}

const LIST_NEWEST_FIRST = listStatement('newest first');
const LIST_OLDEST_FIRST = listStatement('oldest first');

/**
 * An event whose `idempotency_key` is stored already (its earlier write committed, though its
 * writer never heard so) is skipped: the unique index (migration 13) is the only one an insert can
 * conflict with, the ids being given by the database.
 */
const insertEventBatch = batchInsert(
  'events',
  [
    ['app_id', 'text'],
    ['type', 'text'],
    ['at', 'bigint'],
    ['principal', 'text'],
    ['client_address', 'text'],
    ['details', 'json'],
    ['idempotency_key', 'bytes'],
  ],
  'ON CONFLICT DO NOTHING',
);

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
 * Records that the writer added its batch `:number`, unless it added this one (or a later one)
 * already: 1 row when recorded, 0 when not. A writer's row is only ever updated by that writer,
 * whose writes take turns; what it may wait for is its own earlier try of the same batch, still
 * uncommitted on a database that stopped answering, and then it sees what that try did (PostgreSQL
 * checks the condition again on the row as that try left it).
 */
const CLAIM_COUNT_BATCH = `INSERT INTO event_count_writers (writer, last_batch, written_at) VALUES (:writer, :number, :at)
  ON CONFLICT (writer) DO UPDATE SET last_batch = excluded.last_batch, written_at = excluded.written_at
  WHERE event_count_writers.last_batch < excluded.last_batch`;

/**
 * Up to `:batch` writers of counts not written since `:cutoff`. The condition is written again
 * outside the subquery, so that PostgreSQL checks it again on a row that its writer updated while
 * the delete waited for it.
 */
const DELETE_COUNT_WRITERS = `DELETE FROM event_count_writers WHERE written_at < :cutoff AND writer IN
  (SELECT writer FROM event_count_writers WHERE written_at < :cutoff LIMIT :batch)`;

/** The most events one statement writes. */
const EVENT_ROWS = 2_000;

/**
 * Writes a batch of events in one statement, but those whose idempotency key is stored already. A
 * change's audit events are written so in the change's own transaction: both are written, or neither.
 */
export async function insertEvents(db: SqlRunner, batch: readonly (NewAuditEvent | KeyedAuditEvent)[]): Promise<void> {
  if (batch.length === 0) return;
  if (batch.length > EVENT_ROWS) {
    // An import's events: a statement each `EVENT_ROWS`, well under the statement timeout, all in one transaction.
    await db.transaction(async (tx) => {
      for (let start = 0; start < batch.length; start += EVENT_ROWS) await insertEvents(tx, batch.slice(start, start + EVENT_ROWS));
    });
    return;
  }
  const rows = batch.map(
    (event) =>
      [
        event.appId,
        event.type,
        event.at,
        event.principal,
        event.clientAddress,
        JSON.stringify(event.details),
        'idempotencyKey' in event ? event.idempotencyKey : null,
      ] as const,
  );
  await db.run(insertEventBatch.statement, insertEventBatch.params(db.dialect, rows));
}

/** Deletes the app's events and counts, in the transaction that deletes the app. */
export async function deleteEventsOfApp(tx: SqlRunner, appId: string): Promise<void> {
  await tx.run('DELETE FROM events WHERE app_id = :appId', { appId });
  await tx.run('DELETE FROM event_counts WHERE app_id = :appId', { appId });
  await tx.run('DELETE FROM event_counts_hourly WHERE app_id = :appId', { appId });
}

const HOUR_MS = 3_600_000;

/** Up to `:batch` rows of a table of counts whose bucket starts before `:cutoff`. */
function deleteCountsBefore(table: 'event_counts' | 'event_counts_hourly'): Statement {
  return {
    sqlite: `DELETE FROM ${table} WHERE (app_id, bucket, type, principal, reason) IN
               (SELECT app_id, bucket, type, principal, reason FROM ${table} WHERE bucket < :cutoff LIMIT :batch)`,
    // SKIP LOCKED: instances running housekeeping at once take different rows.
    postgres: `DELETE FROM ${table} WHERE ctid = ANY (ARRAY
                 (SELECT ctid FROM ${table} WHERE bucket < :cutoff LIMIT :batch FOR UPDATE SKIP LOCKED))`,
  };
}

function compareKeys(a: readonly (string | number)[], b: readonly (string | number)[]): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i]! < b[i]!) return -1;
    if (a[i]! > b[i]!) return 1;
  }
  return 0;
}

export function sqlEventStore(db: SqlRunner): EventStore {
  return {
    async append(batch) {
      await insertEvents(db, batch);
    },
    async list({ appId, type, beforeId, afterId, atLeastId, atMostId, since, until, reason, clientAddress, limit }) {
      const filter = {
        appId,
        type,
        since: since ?? Number.MIN_SAFE_INTEGER,
        until: until ?? Number.MAX_SAFE_INTEGER,
        reason,
        clientAddress,
        limit,
      };
      const rows =
        afterId === undefined
          ? await db.all<EventRow>(LIST_NEWEST_FIRST, {
              ...filter,
              beforeId: beforeId ?? Number.MAX_SAFE_INTEGER,
              atLeastId: atLeastId ?? 0,
            })
          : await db.all<EventRow>(LIST_OLDEST_FIRST, { ...filter, afterId, atMostId: atMostId ?? Number.MAX_SAFE_INTEGER });
      return rows.map(toEvent);
    },
    async windowEdge(appId, from, size) {
      const row =
        'beforeId' in from
          ? await db.get<{ id: number }>(
              'SELECT id FROM events WHERE app_id = :appId AND id < :beforeId ORDER BY id DESC LIMIT 1 OFFSET :offset',
              {
                appId,
                beforeId: from.beforeId,
                offset: size - 1,
              },
            )
          : await db.get<{ id: number }>(
              'SELECT id FROM events WHERE app_id = :appId AND id > :afterId ORDER BY id LIMIT 1 OFFSET :offset',
              {
                appId,
                afterId: from.afterId,
                offset: size - 1,
              },
            );
      return row?.id;
    },
    async lastChanges(appId, type, limit) {
      const rows = await db.all<EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE app_id = :appId AND type = :type AND ${CHANGE_CONDITION} ORDER BY id DESC LIMIT :limit`,
        { appId, type, limit },
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
    async addCounts(counts, batch) {
      if (counts.length === 0) return;
      const rows = counts
        .map((count) => [count.appId, count.bucket, count.type, count.principal ?? '', count.reason ?? '', count.count] as const)
        // In one order, (app, type, principal, reason, minute), that also orders the hours the
        // trigger adds to: instances writing the same hour at once lock its rows in the same order.
        .sort(
          ([a, aBucket, ...aKind], [b, bBucket, ...bKind]) =>
            compareKeys([a, ...aKind.slice(0, 3)], [b, ...bKind.slice(0, 3)]) || aBucket - bBucket,
        );
      const add = async (runner: SqlRunner) => {
        await runner.run(addCountBatch.statement, addCountBatch.params(runner.dialect, rows));
      };
      if (batch === undefined) return add(db);
      // The batch is recorded first, and its counts added only if that recorded it, in one transaction:
      // either both are committed, or neither.
      await db.transaction(async (tx) => {
        if ((await tx.run(CLAIM_COUNT_BATCH, { writer: batch.writer, number: batch.number, at: batch.at })) > 0) await add(tx);
      });
    },
    async listCounts({ appId, bucketMs, since, until, type }) {
      // Hours and days from the counts per hour, but for the hour `until` falls in, which counts per
      // minute end exactly: at most 60 minutes of rows, whatever the span.
      const hourly = bucketMs % HOUR_MS === 0 && since % HOUR_MS === 0;
      const split = hourly ? Math.max(since, until - (until % HOUR_MS)) : since;
      const rows = await db.all<CountRow>(
        `SELECT bucket - bucket % :bucketMs AS bucket, type, principal, reason, sum(count) AS count FROM (
           SELECT bucket, type, principal, reason, count FROM event_counts_hourly
           WHERE app_id = :appId AND bucket >= :since AND bucket < :split AND (CAST(:type AS TEXT) IS NULL OR type = :type)
           UNION ALL
           SELECT bucket, type, principal, reason, count FROM event_counts
           WHERE app_id = :appId AND bucket >= :split AND bucket < :until AND (CAST(:type AS TEXT) IS NULL OR type = :type)
         ) AS counted
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
        { appId, bucketMs, since, split, until, type },
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
      const minutes = await db.run(deleteCountsBefore('event_counts'), { cutoff, batch });
      if (minutes >= batch) return minutes;
      // An hour goes once all of it is past the cut-off.
      return minutes + (await db.run(deleteCountsBefore('event_counts_hourly'), { cutoff: cutoff - HOUR_MS + 1, batch: batch - minutes }));
    },
    async deleteCountWritersOlderThan(cutoff, batch) {
      return db.run(DELETE_COUNT_WRITERS, { cutoff, batch });
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
