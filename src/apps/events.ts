import type { AppAccess } from '../app-access.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { EventCountQuery, EventCountsDescription } from '../events/counts.js';
import type { AuditEvent } from '../events/event.js';
import type { EventLog, EventPage, EventsAfter } from '../events/log.js';
import { MAX_EVENT_PAGE, type EventFilter, type EventPageQuery } from '../events/query.js';
import type { RequestContext } from '../request-context.js';
import { appAttention, type AppAttention } from './attention.js';
import { appNotFound } from 'tessera-tokens/internal/error-catalogue.js';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { secretExposures, type SecretExposure } from './secret-exposure.js';

/** The events after the newest one a reader has, oldest first: what a page following the log adds. */
export interface EventsAfterQuery extends EventFilter {
  afterId: number;
  limit: number;
}

/**
 * An app's audit log and its counts, read for whoever asks: the portal's pages, the API's events
 * routes. Each read asks `access` first whether whoever the context names may see the app's events,
 * so a developer of no app gets `APP_NOT_FOUND`, as for an app that does not exist. The `EventLog`
 * underneath records; its own reads are the operator's (the CLI).
 */
export class AppEvents {
  constructor(
    private readonly log: EventLog,
    private readonly access: AppAccess,
    private readonly clock: Clock,
    /** The app as stored: its credentials and previous secrets, which tell what became of an exposed secret. */
    private readonly findApp: (appId: string) => MaybePromise<AppRecord | undefined>,
  ) {}

  /** Newest first, `limit` at a time, older than `beforeId` (the previous page's `nextCursor`). */
  async list(appId: string, query: EventPageQuery, context: RequestContext): Promise<EventPage> {
    await this.access.authorize(appId, 'view_events', context);
    return this.log.list(appId, query);
  }

  /**
   * Every event of the app that `filter` keeps, newest first, a page (`MAX_EVENT_PAGE`) at a time as
   * they are taken: the whole log is never held. The first page is read before this resolves, so
   * that a refusal or an unreachable store is an error of the request, not a download cut short.
   */
  async export(appId: string, filter: EventFilter, context: RequestContext): Promise<AsyncIterable<readonly AuditEvent[]>> {
    await this.access.authorize(appId, 'view_events', context);
    const log = this.log;
    let page = await log.list(appId, { ...filter, limit: MAX_EVENT_PAGE });
    return (async function* () {
      for (;;) {
        yield page.events;
        if (page.nextCursor === null) return;
        page = await log.list(appId, { ...filter, limit: MAX_EVENT_PAGE, beforeId: Number(page.nextCursor) });
      }
    })();
  }

  async listAfter(appId: string, { afterId, limit, ...filter }: EventsAfterQuery, context: RequestContext): Promise<EventsAfter> {
    await this.access.authorize(appId, 'view_events', context);
    return this.log.listAfter(appId, afterId, filter, limit);
  }

  /** One event of the app, or undefined when it has none of this id (or no longer has it). */
  async find(appId: string, eventId: number, context: RequestContext): Promise<AuditEvent | undefined> {
    await this.access.authorize(appId, 'view_events', context);
    return this.log.find(appId, eventId);
  }

  /** The app's counts per minute, hour or day. */
  async counts(appId: string, query: EventCountQuery, context: RequestContext): Promise<EventCountsDescription> {
    await this.access.authorize(appId, 'view_events', context);
    return this.log.counts(appId, query);
  }

  /** The newest time each of the app's ClientSecrets was sent from a browser, while its log still has it (`secretExposures`). */
  async secretExposures(appId: string, context: RequestContext): Promise<SecretExposure[]> {
    await this.access.authorize(appId, 'view_events', context);
    return secretExposures(this.log, await this.#app(appId), this.clock.now());
  }

  /** What about the app calls for attention now: a leaked ClientSecret not rotated since, a burst of token requests refused for their keys. */
  async attention(appId: string, context: RequestContext): Promise<AppAttention> {
    await this.access.authorize(appId, 'view_events', context);
    return appAttention(this.log, await this.#app(appId), this.clock.now());
  }

  async #app(appId: string): Promise<AppRecord> {
    const app = await this.findApp(appId);
    if (app === undefined) throw appNotFound();
    return app;
  }
}
