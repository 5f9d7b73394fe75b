import type { Clock } from '../clock.js';
import { isServiceUnavailable } from '../error-catalogue.js';
import { actorOf, type Actor, type RequestContext } from '../request-context.js';
import {
  COUNT_PERIODS,
  countBucketOf,
  countReasonOf,
  describeCounts,
  type EventCount,
  type EventCountQuery,
  type EventCountsDescription,
} from './counts.js';
import type { AuditEvent, ChangeEventType, EventDetails, EventStamp, EventType, NewAuditEvent } from './event.js';
import { MAX_EVENT_PAGE, type EventFilter, type EventPageQuery } from './query.js';
import { ReadLane } from './read-lane.js';
import { retentionOf } from './retention.js';
import type { EventStore } from './store.js';

export interface EventPage {
  events: AuditEvent[];
  /** Pass as `cursor` for the next (older) page; null when there is none. */
  nextCursor: string | null;
}

/**
 * What the log tells the metrics. The `Metrics` port (metrics/port.ts) extends it: the port names
 * the event types, so the log declares what it needs of the port rather than import it.
 */
export interface EventLogMetrics {
  /**
   * The counts of one flush: tokens issued and refused come from there, so that a request pays
   * nothing more than the count it already makes.
   */
  eventsCounted(type: EventType, principal: Actor | null, reason: string | null, count: number): void;
  /** A group commit: `size` events (or counts) written in one transaction, in `seconds`. */
  batchWritten(writer: 'events', size: number, seconds: number): void;
  /** A batch of audit events (or of their counts) that could not be written. */
  eventWriteFailed(): void;
}

const NO_EVENT_LOG_METRICS: EventLogMetrics = { eventsCounted() {}, batchWritten() {}, eventWriteFailed() {} };

/** Events, or counts, written in one transaction at most. */
const MAX_BATCH = 1000;
/**
 * How long an event waits in the buffer at most. Under load, one write per 20 ms instead of one per
 * event-loop turn makes batches of hundreds, which cost less per event (docs/benchmarks.md, item 9).
 */
export const EVENT_FLUSH_DELAY_MS = 20;

/**
 * A read with a filter (a type, a range, a reason, an address) examines the app's events this many
 * at a time, each window one step in the `ReadLane` (measured: about 2 ms of SQLite's event loop),
 * and at most `EVENT_SCAN_MAX` for one request: a filter that matches few of the 110,000 events an
 * app may keep answers a page of fewer than asked, even none, with a cursor to go on from.
 */
export const EVENT_SCAN_STEP = 2_000;
export const EVENT_SCAN_MAX = 20_000;

/** What `EventLog.listAfter` found, and the id the next read goes on after. */
export interface EventsAfter {
  events: AuditEvent[];
  readTo: number;
}

/** Whether a read has a condition besides its page: then it may examine many events for few. */
function isFiltered(filter: EventFilter): boolean {
  return (
    filter.type !== undefined ||
    filter.since !== undefined ||
    filter.until !== undefined ||
    filter.reason !== undefined ||
    filter.clientAddress !== undefined
  );
}
/** How long events whose write failed because the store could not be reached wait for another try. */
export const EVENT_RETRY_DELAY_MS = 1_000;
/**
 * Events (and counts) kept for another try at most: past it, an outage's events are given up rather
 * than grow the process without bound. At the default token limit one address makes 1200 a minute.
 */
const MAX_KEPT_FOR_RETRY = 100_000;

/**
 * The audit log. Recording never delays or fails the operation it describes: events are buffered
 * and written together (no promise per event on the hot path) within `EVENT_FLUSH_DELAY_MS`. A
 * write that fails because the store cannot be reached (a terminated connection, a failover) is
 * tried again after `EVENT_RETRY_DELAY_MS`, with whatever was recorded meanwhile, so that an outage
 * loses no event; any other failure, or an outage's events past `MAX_KEPT_FOR_RETRY`, is reported
 * through `onError` and given up. Reads through this log write the buffer first.
 * Every recorded event is counted (per app, UTC minute, type, principal and reason: the counts of
 * a flush are added to the stored ones in one statement); `retentionOf` says which are also rows,
 * and of which class. Operators' and admins' changes are the exception: their events are written
 * in the change's own transaction (`stamp`), never buffered, so that no change is made without
 * its record.
 */
export class EventLog {
  /** Apps with events recorded since the last `takeAppsRecorded`: the ones housekeeping trims. */
  #recorded = new Set<string>();
  #buffer: NewAuditEvent[] = [];
  /** The counts recorded since the last flush, by app, minute, type, principal and reason. */
  #counts = new Map<string, EventCount>();
  #flushTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  /** Events taken from the buffer whose write has not ended yet. */
  #beingWritten = 0;

  /** Where filtered reads take turns, a window at a time. */
  readonly #lane = new ReadLane();

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    /** Told of events and counts not written: `message` says how many, and whether they are tried again. */
    private readonly onError: (message: string, error: unknown) => void = () => {},
    private readonly metrics: EventLogMetrics = NO_EVENT_LOG_METRICS,
  ) {}

  /** Events recorded and not written yet (the `tessera_event_buffer_events` gauge, read when scraped). */
  get unwritten(): number {
    return this.#buffer.length + this.#beingWritten;
  }

  record(type: EventType, appId: string, context: RequestContext, principal: Actor | null, details: EventDetails = {}): void {
    const at = this.clock.now();
    this.#count(appId, countBucketOf(at), type, principal, countReasonOf(details));
    if (retentionOf(type, principal) !== 'counted') {
      this.#recorded.add(appId);
      this.#buffer.push({ type, appId, at, principal, clientAddress: context.clientAddress, details });
    }
    this.#flushTimer ??= setTimeout(() => void this.flush(), EVENT_FLUSH_DELAY_MS);
  }

  #count(appId: string, bucket: number, type: EventType, principal: Actor | null, reason: string | null, count = 1): void {
    const key = `${appId} ${bucket} ${type} ${principal} ${reason}`;
    const counted = this.#counts.get(key);
    if (counted === undefined) this.#counts.set(key, { appId, bucket, type, principal, reason, count });
    else counted.count += count;
  }

  /**
   * Who, when and from where, for events that a store method writes in the same transaction as the
   * change they describe (see `AuditOf`): not buffered. Resolves once the events recorded before
   * are written, so that event ids keep the order of recording. Notes the app for trimming.
   */
  async stamp(appId: string, context: RequestContext): Promise<EventStamp> {
    this.#recorded.add(appId);
    await this.flush();
    return { appId, at: this.clock.now(), principal: actorOf(context), clientAddress: context.clientAddress };
  }

  /** Writes what is buffered; resolves once everything recorded before the call is written (or failed). */
  flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    while (this.#buffer.length > 0) {
      const batch = this.#buffer.splice(0, MAX_BATCH);
      this.#beingWritten += batch.length;
      // One write at a time, so events are stored in the order they were recorded. `#write` handles
      // its own failures and chains the write onto `#writing`, which this method returns.
      void this.#write(
        'audit events',
        batch.length,
        () => this.store.append(batch),
        () => this.#buffer.unshift(...batch),
      ).finally(() => (this.#beingWritten -= batch.length));
    }
    if (this.#counts.size > 0) {
      // In the order of their keys, so that instances adding to the same rows (PostgreSQL) lock
      // them in the same order and never wait for each other in a cycle.
      const counts = [...this.#counts.values()].sort(byCountKey);
      this.#counts.clear();
      for (const { type, principal, reason, count } of counts) this.metrics.eventsCounted(type, principal, reason, count);
      for (let start = 0; start < counts.length; start += MAX_BATCH) {
        const batch = counts.slice(start, start + MAX_BATCH);
        const keep = () => {
          for (const { appId, bucket, type, principal, reason, count } of batch) this.#count(appId, bucket, type, principal, reason, count);
        };
        void this.#write('event counts', batch.length, () => this.store.addCounts(batch), keep);
      }
    }
    return this.#writing;
  }

  /**
   * Queues one write after the others. One that failed because the store could not be reached is
   * kept (`keep` puts it back) and tried again later; any other failure is reported and given up.
   * Either way the next write goes on.
   */
  #write(what: string, size: number, write: () => Promise<void>, keep: () => void): Promise<void> {
    this.#writing = this.#writing
      .then(async () => {
        const started = performance.now();
        await write();
        this.metrics.batchWritten('events', size, (performance.now() - started) / 1000);
      })
      .catch((error: unknown) => {
        this.metrics.eventWriteFailed();
        if (!isServiceUnavailable(error) || this.#buffer.length + this.#counts.size + size > MAX_KEPT_FOR_RETRY) {
          this.onError(`${size} ${what} could not be written and are lost`, error);
          return;
        }
        keep();
        if (this.#retryTimer !== undefined) return;
        // The error is always the same 503: the message says it all.
        this.onError(
          `${size} ${what} could not be written while the database cannot be reached; they are tried again every ${EVENT_RETRY_DELAY_MS / 1000} s`,
          undefined,
        );
        this.#retryTimer = setTimeout(() => {
          this.#retryTimer = undefined;
          void this.flush();
        }, EVENT_RETRY_DELAY_MS);
        // A process stopping while the database is away is not held up by it (its last flush says what is lost).
        this.#retryTimer.unref();
      });
    return this.#writing;
  }

  takeAppsRecorded(): string[] {
    const apps = [...this.#recorded];
    this.#recorded.clear();
    return apps;
  }

  /**
   * Newest first, `limit` at a time, older than `beforeId` (the previous page's `nextCursor`), of
   * the events the filter (type, range, reason, client address) lets through.
   */
  async list(appId: string, { limit, beforeId, ...filter }: EventPageQuery): Promise<EventPage> {
    await this.flush();
    // One more than asked tells whether there is a next page.
    const { events, edge } = isFiltered(filter)
      ? await this.#scan(appId, filter, { beforeId: beforeId ?? Number.MAX_SAFE_INTEGER }, limit + 1)
      : { events: await this.store.list({ appId, ...(beforeId === undefined ? {} : { beforeId }), limit: limit + 1 }), edge: undefined };
    const page = events.slice(0, limit);
    if (events.length > limit) return { events: page, nextCursor: String(page[page.length - 1]!.id) };
    // The events examined ended before the log did: the next page goes on below them.
    return { events: page, nextCursor: edge === undefined ? null : String(edge) };
  }

  /**
   * A filtered read, a window of `EVENT_SCAN_STEP` of the app's events at a time (newest first
   * below `beforeId`, or oldest first above `afterId`), in the lane (`ReadLane`), until `limit`
   * events match, the log ends, or `EVENT_SCAN_MAX` were examined. `edge`: the id of the last event
   * examined when the log goes on past it (undefined when it was read to its end, or `limit` matched).
   */
  async #scan(
    appId: string,
    filter: EventFilter,
    from: { beforeId: number } | { afterId: number },
    limit: number,
  ): Promise<{ events: AuditEvent[]; edge: number | undefined }> {
    return this.#lane.run(appId, async (step) => {
      const events: AuditEvent[] = [];
      let position = from;
      for (let examined = 0; ; examined += EVENT_SCAN_STEP) {
        const found = await step(async () => {
          const edge = await this.store.windowEdge(appId, position, EVENT_SCAN_STEP);
          const bound = 'beforeId' in position ? { atLeastId: edge ?? 0 } : { atMostId: edge ?? Number.MAX_SAFE_INTEGER };
          return { edge, rows: await this.store.list({ appId, ...filter, ...position, ...bound, limit: limit - events.length }) };
        });
        events.push(...found.rows);
        if (events.length >= limit || found.edge === undefined) return { events, edge: undefined };
        if (examined + EVENT_SCAN_STEP >= EVENT_SCAN_MAX) return { events, edge: found.edge };
        position = 'beforeId' in position ? { beforeId: found.edge } : { afterId: found.edge };
      }
    });
  }

  /** The app's counts per minute, hour or day (`GET …/events/counts`), optionally of one type. */
  async counts(appId: string, query: EventCountQuery, type?: EventType): Promise<EventCountsDescription> {
    await this.flush();
    // Up to a few thousand rows (30 days of hours): a step in the lane, as a window of a filtered read.
    const rows = await this.#lane.run(appId, (step) =>
      step(() =>
        this.store.listCounts({
          appId,
          bucketMs: COUNT_PERIODS[query.per],
          since: query.since,
          until: query.until,
          ...(type === undefined ? {} : { type }),
        }),
      ),
    );
    return describeCounts(appId, query, rows);
  }

  /**
   * Oldest first, after `afterId` (for following the log), of the events the filter lets through,
   * and the id to follow on from: the last one returned, or, when a filter's read stopped at
   * `EVENT_SCAN_MAX` events examined, the last one examined.
   */
  async listAfter(appId: string, afterId: number, filter: EventFilter = {}, limit = MAX_EVENT_PAGE): Promise<EventsAfter> {
    await this.flush();
    const { events, edge } = isFiltered(filter)
      ? await this.#scan(appId, filter, { afterId }, limit)
      : { events: await this.store.list({ appId, afterId, limit }), edge: undefined };
    return { events, readTo: edge ?? events.at(-1)?.id ?? afterId };
  }

  /** The app's newest event of a type of change (a rotation, an exposed secret, …), or undefined. */
  async lastChange(appId: string, type: ChangeEventType): Promise<AuditEvent | undefined> {
    return (await this.lastChanges(appId, type, 1))[0];
  }

  /** The app's newest `limit` events of a type of change, newest first. */
  async lastChanges(appId: string, type: ChangeEventType, limit: number): Promise<AuditEvent[]> {
    await this.flush();
    return this.store.lastChanges(appId, type, limit);
  }

  /** The app's event of this id, or undefined. */
  async find(appId: string, id: number): Promise<AuditEvent | undefined> {
    await this.flush();
    const [event] = await this.store.list({ appId, beforeId: id + 1, limit: 1 });
    return event?.id === id ? event : undefined;
  }
}

function byCountKey(a: EventCount, b: EventCount): number {
  return (
    compare(a.appId, b.appId) ||
    a.bucket - b.bucket ||
    compare(a.type, b.type) ||
    compare(a.principal ?? '', b.principal ?? '') ||
    compare(a.reason ?? '', b.reason ?? '')
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
