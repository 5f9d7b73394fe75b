import type { EventCount } from './counts.js';
import type { AuditEvent, ChangeEventType, EventType, KeyedAuditEvent, NewAuditEvent } from './event.js';
import type { EventFilter } from './query.js';
import type { EventClass } from './retention.js';

/**
 * Events of one app, by the conditions of `EventFilter` (each one given must hold). The stores read
 * them through the app's index of ids (`events_by_app`), newest or oldest first, and test the other
 * conditions on the rows they pass: no index on `at`, reasons or addresses is kept up to date with
 * every refusal written, and the rows an app keeps are capped (`EVENTS_MAX_PER_APP`,
 * `EVENTS_MAX_REFUSALS_PER_APP`), which bounds what one query reads.
 */
export interface EventQuery extends EventFilter {
  appId: string;
  /** Only events with a smaller id (the cursor of the page before). */
  beforeId?: number;
  /** Only events with a larger id (`tessera events --follow`). */
  afterId?: number;
  /** Only events with an id at least this: the far edge of a window read newest first (`windowEdge`). */
  atLeastId?: number;
  /** Only events with an id at most this: the far edge of a window read oldest first. */
  atMostId?: number;
  limit: number;
}

export interface EventCountsQuery {
  appId: string;
  /** The length of a listed bucket: a multiple of a minute that divides a day. */
  bucketMs: number;
  /** UNIX ms, the start of a bucket. */
  since: number;
  /** UNIX ms, exclusive: stored minutes that start before it. */
  until: number;
  type?: EventType;
}

/** The audit log's storage seam; one SQL implementation over both dialects (`src/store/sql/events.ts`). */
export interface EventStore {
  /**
   * Writes the events in one transaction, in order, but those whose idempotency key is stored
   * already: a batch written again after a write whose commit is in doubt stores each event once.
   */
  append(events: readonly (NewAuditEvent | KeyedAuditEvent)[]): Promise<void>;
  /** Newest first, or oldest first with `afterId`. */
  list(query: EventQuery): Promise<AuditEvent[]>;
  /** The app's newest `limit` events of a type of change, newest first, found through an index of those alone (`events_changes_by_app`). */
  lastChanges(appId: string, type: ChangeEventType, limit: number): Promise<AuditEvent[]>;
  /**
   * The id of the app's `size`-th event below `beforeId` (newest first) or above `afterId` (oldest
   * first), read from the app's index of ids alone; undefined when fewer are left. Bounds what a
   * filtered read examines in one step (`EventLog`).
   */
  windowEdge(appId: string, from: { beforeId: number } | { afterId: number }, size: number): Promise<number | undefined>;
  /**
   * Deletes up to `batch` of the app's oldest events of a class (`retention.ts`) beyond its newest
   * `keep` of that class; returns how many.
   */
  trimApp(appId: string, eventClass: EventClass, keep: number, batch: number): Promise<number>;
  /** Deletes up to `batch` of the oldest events recorded before `cutoff` (UNIX ms); returns how many. */
  deleteOlderThan(cutoff: number, batch: number): Promise<number>;
  /**
   * Adds each count to the stored count of its app, minute (`bucket`), type, principal and reason,
   * in one transaction. At most one entry per key in a call. With `batch`, only if the writer has
   * not added this batch (or a later one) already, in the same transaction: a batch written again
   * after a write whose commit is in doubt is added once.
   */
  addCounts(counts: EventCount[], batch?: CountBatch): Promise<void>;
  /** The app's counts summed per bucket of `bucketMs`, by bucket, type, principal and reason. */
  listCounts(query: EventCountsQuery): Promise<EventCount[]>;
  /** Deletes up to `batch` of the counts of minutes that start before `cutoff`; returns how many. */
  deleteCountsOlderThan(cutoff: number, batch: number): Promise<number>;
  /**
   * Deletes up to `batch` of the writers of counts (`CountBatch.writer`) that last added a batch
   * before `cutoff`; returns how many.
   */
  deleteCountWritersOlderThan(cutoff: number, batch: number): Promise<number>;
}

/**
 * Which batch of counts a write is: its writer (an `EventLog`, by an id drawn when it is made) and
 * its number, which grows with each batch the writer takes. A writer tries a batch whose write
 * failed again, as it was, before it tries any later one: so the store keeps, per writer, the number
 * of the last batch added, and adds a batch only if its number is higher.
 */
export interface CountBatch {
  writer: string;
  number: number;
  /** When it is written (UNIX ms): housekeeping removes the writers not written for a while. */
  at: number;
}
