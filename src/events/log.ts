import { randomBytes } from 'node:crypto';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { isServiceUnavailable, reasonOf } from 'tessera-tokens/internal/error-catalogue.js';
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
import {
  newIdempotencyKey,
  type AuditEvent,
  type ChangeEventType,
  type EventDetails,
  type EventStamp,
  type EventType,
  type KeyedAuditEvent,
} from './event.js';
import { MAX_EVENT_PAGE, type EventFilter, type EventPageQuery } from './query.js';
import { ReadLane } from './read-lane.js';
import { retentionOf } from './retention.js';
import type { CountBatch, EventStore } from './store.js';

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
  /** A write of audit events (or of their counts) that failed, whether it is tried again or given up. */
  eventWriteFailed(): void;
  /**
   * `count` events given up: their rows (`events`), or their part of the counts (`counts`), never
   * to be written.
   */
  eventsLost(part: LostPart, reason: LossReason, count: number): void;
}

/** What of an event is lost: its row in the log, or its part of the counts. */
export type LostPart = 'events' | 'counts';

/**
 * Why: the database refused the write (`refused`); the database could not be reached while the
 * events kept for another try reached their bound (`buffer_full`); the process stopped before the
 * database could be reached again (`stopped`).
 */
export type LossReason = 'refused' | 'buffer_full' | 'stopped';

/** What `EventLog.abandon` gave up: audit events (their rows), and events whose counts were not added. */
export interface Unwritten {
  events: number;
  /**
   * Of `events`, those sent in a write the database did not answer (one under way, or one that
   * found it away): a database that received it before it stopped answering carries it out when it
   * runs again, so these may be stored after all. The others were never sent.
   */
  eventsSent: number;
  counts: number;
}

const NO_EVENT_LOG_METRICS: EventLogMetrics = { eventsCounted() {}, batchWritten() {}, eventWriteFailed() {}, eventsLost() {} };

export interface EventLogOptions {
  /** Told of events lost, and when writes start failing: once per outage, not per attempt. */
  onWarning?: (message: string, error: unknown) => void;
  /** Told when writes succeed again after failing: how long, and how many events waited. */
  onNotice?: (message: string) => void;
  metrics?: EventLogMetrics;
  /** Events kept for another try at most (`MAX_KEPT_FOR_RETRY`); tests lower it. */
  maxKeptForRetry?: number;
}

/** Told of each event a request records (`EventLog.record`), as it is recorded: it must not throw, nor take long. */
export type RecordListener = (type: EventType, appId: string, at: number, details: EventDetails) => void;

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
 * Events (and counts) kept for another try at most: past it, an outage's new events are given up
 * rather than grow the process without bound. At the default token limit one address makes 1200 a
 * minute.
 */
export const MAX_KEPT_FOR_RETRY = 100_000;

/** Writes failing because the database cannot be reached: from the first failure to the first turn of the writer that writes everything. */
interface Outage {
  /** `performance.now()` at the first failure. */
  startedAt: number;
  failedAttempts: number;
  /** Events (rows) and counts written while it lasted: what waited, and what was recorded meanwhile. */
  writtenEvents: number;
  writtenCounts: number;
}

/**
 * The audit log. Recording never delays or fails the operation it describes: events are buffered
 * and written together (no promise per event on the hot path) within `EVENT_FLUSH_DELAY_MS`, one
 * write at a time, in the order they were recorded. Each buffered event has an id of its own
 * (`KeyedAuditEvent`), so that writing a batch again after a write whose commit is in doubt stores
 * it once.
 *
 * A write that fails because the store cannot be reached (a terminated connection, a failover, a
 * database that hangs) is an outage: its events and counts are kept, in order, and tried again every
 * `EVENT_RETRY_DELAY_MS` (and by any read or change that needs the log written first), with what is
 * recorded meanwhile, so that an outage loses nothing. It is said once when it starts (`onWarning`,
 * with the reason) and once when the events are written again (`onNotice`, how long and how many),
 * never per attempt. Events are lost only when the database refuses a write, when an outage's events
 * reach `MAX_KEPT_FOR_RETRY`, or when the process stops before the database is back: each is said,
 * and counted (`eventsLost`). Reads through this log write the buffer first.
 *
 * Every recorded event is counted (per app, UTC minute, type, principal and reason: the counts of
 * a flush are added to the stored ones in one transaction); `retentionOf` says which are also rows,
 * and of which class. Each batch of counts has a number of its own (`CountBatch`), and a batch whose
 * write met an unreachable database is tried again as it was, with that number, before any later
 * one: the store adds it once, whatever the first try did. Operators' and admins' changes are the
 * exception: their events are written in the change's own transaction (`stamp`), never buffered, so
 * that no change is made without its record.
 */
export class EventLog {
  /** Apps with events recorded since the last `takeAppsRecorded`: the ones housekeeping trims. */
  #recorded = new Set<string>();
  #buffer: KeyedAuditEvent[] = [];
  /** The counts recorded since the last flush, by app, minute, type, principal and reason. */
  #counts = new Map<string, EventCount>();
  /** Counts taken from `#counts` (and told to the metrics) whose write has not succeeded yet. */
  #countsToWrite = new Map<string, EventCount>();
  /**
   * The batch of counts whose write failed as "cannot be reached", taken out of `#countsToWrite`:
   * its first try may have committed, so it is tried again as it is, with its number, and no later
   * batch is tried before it.
   */
  #countsInDoubt: { counts: EventCount[]; number: number } | undefined;
  /** This log as a writer of counts (`CountBatch.writer`): no other log, here or elsewhere, has it. */
  readonly #countWriter = randomBytes(16).toString('hex');
  /** The number of the last batch of counts taken. */
  #countBatches = 0;
  #flushTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  /** The turn of the writer queued behind `#writing`, until it starts. */
  #nextTurn: Promise<void> | undefined;
  /** Events taken from the buffer whose write has not ended yet. */
  #beingWritten = 0;
  /**
   * How many of the buffer's first events were sent in a write that found the database away: in
   * doubt, since a database that received the write before it stopped answering carries it out
   * when it runs again. (A batch put back goes in front, so these are always the first ones.)
   */
  #sentAtFront = 0;
  #outage: Outage | undefined;
  /** Events not buffered, the buffer being full, since a turn of the writer last wrote everything. */
  #droppedEvents = 0;
  /** Set by `abandon`: nothing is written, kept or said after it. */
  #abandoned = false;

  /** Where filtered reads take turns, a window at a time. */
  readonly #lane = new ReadLane();

  readonly #warn: (message: string, error: unknown) => void;
  readonly #notice: (message: string) => void;
  #onRecord: RecordListener | undefined;
  readonly #metrics: EventLogMetrics;
  readonly #maxKept: number;

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    options: EventLogOptions = {},
  ) {
    this.#warn = options.onWarning ?? (() => {});
    this.#notice = options.onNotice ?? (() => {});
    this.#metrics = options.metrics ?? NO_EVENT_LOG_METRICS;
    this.#maxKept = options.maxKeptForRetry ?? MAX_KEPT_FOR_RETRY;
  }

  /** Events recorded and not written yet (the `tessera_event_buffer_events` gauge, read when scraped). */
  get unwritten(): number {
    return this.#buffer.length + this.#beingWritten;
  }

  /** Sets the one listener told of each event recorded (the watch for bursts of refusals). */
  onRecord(listener: RecordListener): void {
    this.#onRecord = listener;
  }

  record(type: EventType, appId: string, context: RequestContext, principal: Actor | null, details: EventDetails = {}): void {
    const at = this.clock.now();
    this.#onRecord?.(type, appId, at, details);
    this.#count(this.#counts, appId, countBucketOf(at), type, principal, countReasonOf(details));
    if (retentionOf(type, principal) !== 'counted') {
      this.#recorded.add(appId);
      if (this.#buffer.length < this.#maxKept) {
        this.#buffer.push({
          type,
          appId,
          at,
          principal,
          clientAddress: context.clientAddress,
          details,
          idempotencyKey: newIdempotencyKey(at),
        });
      } else {
        this.#bufferFull();
      }
    }
    // While writes fail, the retry timer tries them again, not every flush.
    if (this.#outage === undefined) this.#flushTimer ??= setTimeout(() => void this.flush(), EVENT_FLUSH_DELAY_MS);
  }

  #count(
    into: Map<string, EventCount>,
    appId: string,
    bucket: number,
    type: EventType,
    principal: Actor | null,
    reason: string | null,
    count = 1,
  ): void {
    const key = `${appId} ${bucket} ${type} ${principal} ${reason}`;
    const counted = into.get(key);
    if (counted === undefined) into.set(key, { appId, bucket, type, principal, reason, count });
    else counted.count += count;
  }

  /** An event whose row cannot be kept: the buffer holds `#maxKept` already (while writes fail, in practice). */
  #bufferFull(): void {
    this.#metrics.eventsLost('events', 'buffer_full', 1);
    if (this.#droppedEvents++ > 0) return;
    this.#warn(
      `audit events are being lost: ${this.#maxKept} are waiting to be written already` +
        (this.#outage === undefined ? '' : ' while the database cannot be reached') +
        '; events recorded from now on are counted but not stored until the writes catch up',
      undefined,
    );
  }

  /**
   * Who, when and from where, for events that a store method writes in the same transaction as the
   * change they describe (`Store.transaction`): not buffered. Resolves once the events recorded before
   * are written, so that event ids keep the order of recording. Notes the app for trimming.
   */
  async stamp(appId: string, context: RequestContext): Promise<EventStamp> {
    this.#recorded.add(appId);
    await this.flush();
    return { appId, at: this.clock.now(), principal: actorOf(context), clientAddress: context.clientAddress };
  }

  /**
   * Writes what is buffered; resolves once everything recorded before the call is written, given
   * up, or kept for another try (the database cannot be reached).
   */
  flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    // A turn not started yet takes everything recorded until it starts: one is enough, however
    // many flushes come while a slow write is under way.
    if (this.#nextTurn !== undefined) return this.#nextTurn;
    const turn = this.#writing.then(() => {
      this.#nextTurn = undefined;
      return this.#writeBuffered();
    });
    this.#nextTurn = turn;
    this.#writing = turn;
    return turn;
  }

  /**
   * Writes the log one last time before the store closes. While the database cannot be reached, it
   * is tried again every `EVENT_RETRY_DELAY_MS` until `keepTryingUntil` aborts (`tessera serve`'s
   * bound on closing the store); without it, once (the CLI). What still cannot be written is lost,
   * and said so, unless `abandon` took it first (then its caller says it).
   */
  async close(keepTryingUntil?: AbortSignal): Promise<void> {
    await this.flush();
    for (;;) {
      if (this.#abandoned) return;
      if (this.#buffer.length === 0 && this.#counts.size === 0 && this.#countsToWrite.size === 0 && this.#countsInDoubt === undefined)
        break;
      if (this.#outage === undefined) {
        // What was recorded while that turn wrote (it writes only what it found).
        await this.flush();
        continue;
      }
      if (keepTryingUntil === undefined || keepTryingUntil.aborted) break;
      await delay(EVENT_RETRY_DELAY_MS, keepTryingUntil);
      if (keepTryingUntil.aborted || this.#abandoned) break;
      await this.flush();
    }
    if (this.#abandoned) return;
    const outage = this.#outage;
    const { events, counts } = this.abandon();
    if (events === 0 && counts === 0) return;
    this.#warn(
      `${events} audit events, and the counts of ${counts} events, could not be written before stopping and are lost` +
        (outage === undefined ? '' : ` (the database could not be reached for ${secondsSince(outage.startedAt)} s)`),
      undefined,
    );
  }

  /**
   * Gives up, at once, everything recorded and not written yet (a write under way included, whose
   * outcome no longer matters): counted as lost (`stopped`), not said (the caller says it, with the
   * rest of what it leaves undone). The log writes nothing after it. For a process that stops
   * without waiting any longer for the database.
   */
  abandon(): Unwritten {
    const unwritten = {
      events: this.#buffer.length + this.#beingWritten,
      eventsSent: this.#sentAtFront + this.#beingWritten,
      // A batch in doubt is counted too: the log cannot tell whether its first try committed.
      counts: sumOfCounts([...(this.#countsInDoubt?.counts ?? []), ...this.#countsToWrite.values(), ...this.#counts.values()]),
    };
    this.#sentAtFront = 0;
    this.#abandoned = true;
    this.#buffer = [];
    this.#countsInDoubt = undefined;
    this.#countsToWrite.clear();
    this.#counts.clear();
    clearTimeout(this.#flushTimer);
    clearTimeout(this.#retryTimer);
    this.#flushTimer = this.#retryTimer = undefined;
    if (unwritten.events > 0) this.#metrics.eventsLost('events', 'stopped', unwritten.events);
    if (unwritten.counts > 0) this.#metrics.eventsLost('counts', 'stopped', unwritten.counts);
    return unwritten;
  }

  /**
   * One turn of the writer (turns run one after the other): the events buffered when it starts, a
   * batch at a time, then the counts. It stops at the first write that finds the database away,
   * putting that batch back in front, so that the order of recording is kept for the next turn.
   * Never throws.
   */
  async #writeBuffered(): Promise<void> {
    if (this.#abandoned) return;
    for (const counted of this.#counts.values()) {
      this.#metrics.eventsCounted(counted.type, counted.principal, counted.reason, counted.count);
      const { appId, bucket, type, principal, reason, count } = counted;
      this.#count(this.#countsToWrite, appId, bucket, type, principal, reason, count);
    }
    this.#counts.clear();

    let left = this.#buffer.length;
    while (left > 0) {
      const batch = this.#buffer.splice(0, Math.min(MAX_BATCH, left));
      this.#sentAtFront = Math.max(0, this.#sentAtFront - batch.length);
      left -= batch.length;
      this.#beingWritten += batch.length;
      const outcome = await this.#attempt('events', batch.length, () => this.store.append(batch));
      this.#beingWritten -= batch.length;
      if (this.#abandoned) return;
      if (outcome === 'kept') {
        this.#buffer.unshift(...batch);
        this.#sentAtFront += batch.length;
        return;
      }
    }

    if (!(await this.#writeCounts())) {
      if (this.#abandoned) return;
      const size = this.#countsToWrite.size;
      if (size === 0 || size + (this.#countsInDoubt?.counts.length ?? 0) <= this.#maxKept) return;
      // Counts grow by kind and minute, not by event: only a very long outage of many apps gets
      // here. The batch in doubt is kept (at most `MAX_BATCH`): its first try may have added it.
      const dropped = [...this.#countsToWrite.values()];
      this.#countsToWrite.clear();
      this.#lose('counts', 'buffer_full', sumOfCounts(dropped), undefined);
      return;
    }
    this.#everythingWritten();
  }

  /**
   * The batch in doubt, if any, then `#countsToWrite`, a batch at a time, each taken out of it with
   * a number of its own as it is tried. False when a batch was kept for another try (it is then the
   * batch in doubt, and the rest waits in `#countsToWrite`).
   */
  async #writeCounts(): Promise<boolean> {
    if (this.#countsInDoubt !== undefined) {
      if ((await this.#attemptCounts(this.#countsInDoubt)) === 'kept') return false;
      this.#countsInDoubt = undefined;
    }
    // In the order of their keys, so that instances adding to the same rows (PostgreSQL) lock them
    // in the same order and never wait for each other in a cycle.
    const counts = [...this.#countsToWrite.entries()].sort(([, a], [, b]) => byCountKey(a, b));
    for (let start = 0; start < counts.length; start += MAX_BATCH) {
      const taken = counts.slice(start, start + MAX_BATCH);
      for (const [key] of taken) this.#countsToWrite.delete(key);
      const batch = { counts: taken.map(([, count]) => count), number: ++this.#countBatches };
      const outcome = await this.#attemptCounts(batch);
      if (this.#abandoned) return false;
      if (outcome === 'kept') {
        this.#countsInDoubt = batch;
        return false;
      }
    }
    return true;
  }

  #attemptCounts({ counts, number }: { counts: EventCount[]; number: number }): Promise<'written' | 'kept' | 'lost'> {
    return this.#attempt(
      'counts',
      counts.length,
      () => {
        const batch: CountBatch = { writer: this.#countWriter, number, at: this.clock.now() };
        return this.store.addCounts(counts, batch);
      },
      () => sumOfCounts(counts),
    );
  }

  /**
   * Writes one batch. `kept`: it failed because the database cannot be reached, and is to be tried
   * again; `lost`: it failed otherwise, and is given up.
   */
  async #attempt(
    part: LostPart,
    size: number,
    write: () => Promise<void>,
    eventsIn: () => number = () => size,
  ): Promise<'written' | 'kept' | 'lost'> {
    const started = performance.now();
    try {
      await write();
    } catch (error) {
      this.#metrics.eventWriteFailed();
      if (isServiceUnavailable(error)) {
        this.#writesFailing(error);
        return 'kept';
      }
      this.#lose(part, 'refused', eventsIn(), error);
      return 'lost';
    }
    this.#metrics.batchWritten('events', size, (performance.now() - started) / 1000);
    if (this.#outage !== undefined) {
      if (part === 'events') this.#outage.writtenEvents += size;
      else this.#outage.writtenCounts += eventsIn();
    }
    return 'written';
  }

  #lose(part: LostPart, reason: LossReason, events: number, error: unknown): void {
    this.#metrics.eventsLost(part, reason, events);
    const what = part === 'events' ? `${events} audit events` : `the counts of ${events} events`;
    this.#warn(
      reason === 'refused'
        ? `${what} could not be written and are lost`
        : `${what} are lost: more than ${this.#maxKept} were kept while the database cannot be reached`,
      error,
    );
  }

  /** A write found the database away: said once for the outage, and tried again in a while. */
  #writesFailing(error: unknown): void {
    if (this.#outage === undefined) {
      this.#outage = { startedAt: performance.now(), failedAttempts: 0, writtenEvents: 0, writtenCounts: 0 };
      // The error is a 503 whose stack says nothing: its reason says it all.
      this.#warn(
        `audit events cannot be written: ${reasonOf(error)}. They are kept in memory (at most ${this.#maxKept}) and ` +
          `tried again every ${EVENT_RETRY_DELAY_MS / 1000} s; a line says when they are written again`,
        undefined,
      );
    }
    this.#outage.failedAttempts++;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#retryTimer !== undefined) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.flush();
    }, EVENT_RETRY_DELAY_MS);
    // A process stopping while the database is away is not held up by it (`close` says what is lost).
    this.#retryTimer.unref();
  }

  /** A turn of the writer wrote everything it took: what an outage kept is written. */
  #everythingWritten(): void {
    const [outage, dropped] = [this.#outage, this.#droppedEvents];
    this.#droppedEvents = 0;
    if (outage === undefined) {
      if (dropped > 0) this.#warn(`the audit events caught up; ${dropped} events recorded while the buffer was full are lost`, undefined);
      return;
    }
    this.#outage = undefined;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#notice(
      `audit events are written again, after ${secondsSince(outage.startedAt)} s in which ${outage.failedAttempts} writes failed: ` +
        `${outage.writtenEvents} events, and the counts of ${outage.writtenCounts} events, kept meanwhile are written` +
        (dropped === 0 ? '; none lost' : `; ${dropped} events recorded while the buffer was full are lost`),
    );
    // Events recorded during the outage wait for no retry timer now.
    if (this.#buffer.length > 0 || this.#counts.size > 0) this.#flushTimer ??= setTimeout(() => void this.flush(), EVENT_FLUSH_DELAY_MS);
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

function sumOfCounts(counts: Iterable<EventCount>): number {
  let sum = 0;
  for (const { count } of counts) sum += count;
  return sum;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function secondsSince(start: number): number {
  return Math.round((performance.now() - start) / 1000);
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
