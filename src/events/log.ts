import type { Clock } from '../clock.js';
import { actorOf, type Actor, type RequestContext } from '../request-context.js';
import type { AuditEvent, EventDetails, EventStamp, EventType, NewAuditEvent } from './event.js';
import { MAX_EVENT_PAGE, type EventPageQuery } from './query.js';
import type { EventStore } from './store.js';

export interface EventPage {
  events: AuditEvent[];
  /** Pass as `cursor` for the next (older) page; null when there is none. */
  nextCursor: string | null;
}

/** Events written in one transaction at most. */
const MAX_BATCH = 1000;
/**
 * How long an event waits in the buffer at most. Under load, one write per 20 ms instead of one per
 * event-loop turn makes batches of hundreds, which cost less per event (docs/benchmarks.md, item 9).
 */
export const EVENT_FLUSH_DELAY_MS = 20;

/**
 * The audit log. Recording never delays or fails the operation it describes: events are buffered
 * and written together (no promise per event on the hot path) within `EVENT_FLUSH_DELAY_MS`, and
 * a failed write is reported through `onError`. Reads through this log write the buffer first.
 * Operators' and admins' changes are the exception: their events are written in the change's own
 * transaction (`stamp`), never buffered, so that no change is made without its record.
 */
export class EventLog {
  /** Apps with events recorded since the last `takeAppsRecorded`: the ones housekeeping trims. */
  #recorded = new Set<string>();
  #buffer: NewAuditEvent[] = [];
  #flushTimer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  record(type: EventType, appId: string, context: RequestContext, principal: Actor | null, details: EventDetails = {}): void {
    this.#recorded.add(appId);
    this.#buffer.push({ type, appId, at: this.clock.now(), principal, clientAddress: context.clientAddress, details });
    this.#flushTimer ??= setTimeout(() => void this.flush(), EVENT_FLUSH_DELAY_MS);
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
      // One write at a time, so events are stored in the order they were recorded.
      this.#writing = this.#writing.then(() => this.store.append(batch)).catch(this.onError);
    }
    return this.#writing;
  }

  takeAppsRecorded(): string[] {
    const apps = [...this.#recorded];
    this.#recorded.clear();
    return apps;
  }

  /** Newest first, `limit` at a time, older than `beforeId` (the previous page's `nextCursor`). */
  async list(appId: string, { type, beforeId, limit }: EventPageQuery): Promise<EventPage> {
    await this.flush();
    // One more than asked tells whether there is a next page.
    const events = await this.store.list({ appId, type, beforeId, limit: limit + 1 });
    const page = events.slice(0, limit);
    return { events: page, nextCursor: events.length > limit ? String(page[page.length - 1]!.id) : null };
  }

  /** Oldest first, after `afterId` (for following the log). */
  async listAfter(appId: string, afterId: number, type?: EventType, limit = MAX_EVENT_PAGE): Promise<AuditEvent[]> {
    await this.flush();
    return this.store.list({ appId, type, afterId, limit });
  }
}
