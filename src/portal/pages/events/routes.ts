import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { EXPORT_CONTENT_TYPES, exportChunks, exportFileName, exportFormatOf } from '../../../events/export.js';
import { notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { parseEventPageQuery } from '../../../events/query.js';
import type { RequestContext } from '../../../request-context.js';
import type { BackgroundRouteConfig, PortalContext } from '../../context.js';
import { asDeveloper, requireSession, sendPage, signedIn } from '../../respond.js';
import { chartQuery } from './chart.js';
import {
  backQuery,
  eventIdOf,
  eventIdParam,
  listFilter,
  rawViewOf,
  single,
  stateOf,
  typedState,
  viewOrMistake,
  type EventsQuery,
  type EventView,
} from './form.js';
import { chartOf, eventsPage, liveItems, mistakenEventsPage, singleEventPage } from './views.js';

type EventsRequest = { Params: { appId: string }; Querystring: EventsQuery };
type EventRequest = { Params: { appId: string; eventId: string }; Querystring: EventsQuery };

/** Events on a page of the log. */
const PAGE_SIZE = 25;
/** New events one live update brings at most; the next one brings the rest. */
const LIVE_BATCH = 100;

/**
 * An app's events page, for an investigation: a time range (the last 15 minutes to the last 30
 * days, or from one instant to another) and filters by type, reason and client address, in one GET
 * form; a chart of tokens issued and refused over the range, never from before the app was created,
 * in minutes, hours or days as the range allows; the events of the range, newest first, paged with
 * the log's cursor, each linking to its own page; and a warning while the ClientSecret is known to
 * have leaked into a web page. `…/events/live` gives what is newer than a page of a range that ends
 * now shows, for the script to add without a reload; the page works without it.
 */
export const eventsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, clock }) => {
  app.addHook('preHandler', requireSession);

  /** Member emails by developer id, so that events name the developers who are still members. */
  const emailsOf = async (appId: string, context: RequestContext) =>
    new Map((await members.membersOf(appId, context)).map((member) => [member.developerId, member.email]));

  /** The chart of the view's range, from the app's creation at the earliest. */
  const chartFor = async (appId: string, view: EventView, createdAt: number, context: RequestContext) => {
    const query = chartQuery(view.since, view.until, createdAt);
    if (query === null) return chartOf(view, { query, createdAt });
    return chartOf(view, { query, counts: await events.counts(appId, query, context), createdAt });
  };

  app.get<EventsRequest>('/apps/:appId/events', async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'view_events', context);
    const raw = rawViewOf(request.query);
    const { beforeId } = parseEventPageQuery({ cursor: single(request.query.cursor, 'cursor') });
    const now = clock.now();
    const [view, mistake] = viewOrMistake(raw, now);
    const shown = apps.show(appId, context);
    const [described, exposures, emails, listed, chart] = await Promise.all([
      shown,
      events.secretExposures(appId, context),
      emailsOf(appId, context),
      view === undefined
        ? undefined
        : events.list(appId, { ...listFilter(view), ...(beforeId === undefined ? {} : { beforeId }), limit: PAGE_SIZE }, context),
      view === undefined ? undefined : shown.then((app) => chartFor(appId, view, Date.parse(app.createdAt), context)),
    ]);
    const form = view === undefined ? typedState(raw) : stateOf(view);
    const top = { appId, appName: described.name, permissions, exposures, form, now, mistake };
    if (view === undefined || listed === undefined || chart === undefined) {
      return sendPage(reply, mistakenEventsPage(signedIn(request, reply), top), 400);
    }
    const live = view.range !== 'custom' && beforeId === undefined;
    const newest = listed.events[0]?.id ?? (live ? await newestId(appId, context) : 0);
    const list = { view, beforeId, events: listed.events, nextCursor: listed.nextCursor, emails, chart, live, newest };
    return sendPage(reply, eventsPage(signedIn(request, reply), top, list));
  });

  // Polled by the page every few seconds while it is seen: not a person's activity.
  app.get<EventsRequest>(
    '/apps/:appId/events/live',
    { config: { background: true } satisfies BackgroundRouteConfig },
    async (request, reply) => {
      const { appId } = request.params;
      const context = asDeveloper(request);
      await members.permissions(appId, 'view_events', context);
      const [view, mistake] = viewOrMistake(rawViewOf(request.query), clock.now());
      if (view === undefined) throw new TesseraError('invalid_request', mistake.message);
      if (view.range === 'custom') throw new TesseraError('invalid_request', 'A custom range is not updated live.');
      const after = eventIdOf(single(request.query.after, 'after'));
      const shown = apps.show(appId, context);
      const [added, emails, chart] = await Promise.all([
        events.listAfter(appId, { afterId: after, ...listFilter(view), limit: LIVE_BATCH }, context),
        emailsOf(appId, context),
        shown.then((described) => chartFor(appId, view, Date.parse(described.createdAt), context)),
      ]);
      const newestFirst = added.events.reverse();
      return reply.type('application/json; charset=utf-8').send({
        count: newestFirst.length,
        newest: added.readTo,
        items: liveItems(appId, view, newestFirst, emails).text,
        charts: chart.text,
      });
    },
  );

  // Every event of the range and filters, streamed as a download (the page's Download buttons).
  app.get<EventsRequest>('/apps/:appId/events/export', async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    await members.permissions(appId, 'view_events', context);
    const [view, mistake] = viewOrMistake(rawViewOf(request.query), clock.now());
    if (view === undefined) throw new TesseraError('invalid_request', mistake.message);
    const format = exportFormatOf(single(request.query.format, 'format'), undefined);
    if (format === undefined) throw new TesseraError('invalid_request', 'format must be one of: jsonl, csv.');
    const pages = await events.export(appId, listFilter(view), context);
    return reply
      .headers({
        'content-type': EXPORT_CONTENT_TYPES[format],
        'content-disposition': `attachment; filename="${exportFileName(appId, format)}"`,
      })
      .send(Readable.from(exportChunks(format, pages)));
  });

  app.get<EventRequest>('/apps/:appId/events/:eventId', async (request, reply) => {
    const { appId, eventId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'view_events', context);
    const back = `/portal/apps/${appId}/events${backQuery(request.query, clock.now())}`;
    const id = eventIdParam(eventId);
    if (id === undefined) throw eventNotFound();
    const [described, event, emails] = await Promise.all([
      apps.show(appId, context),
      events.find(appId, id, context),
      emailsOf(appId, context),
    ]);
    if (event === undefined) throw eventNotFound();
    return sendPage(reply, singleEventPage(signedIn(request, reply), permissions, appId, described.name, event, emails, back));
  });

  /** The id of the app's newest event, 0 when there is none: where live updates start when the page lists none. */
  async function newestId(appId: string, context: RequestContext): Promise<number> {
    return (await events.list(appId, { limit: 1 }, context)).events[0]?.id ?? 0;
  }
};

function eventNotFound(): TesseraError {
  return new TesseraError(
    notFound().code,
    'This app has no event with this id: it may have been removed, as events are kept for a limited time.',
  );
}
