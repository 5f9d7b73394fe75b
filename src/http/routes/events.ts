import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppEvents } from '../../apps/events.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { parseEventCountQuery } from '../../events/counts.js';
import { describeEvent } from '../../events/event.js';
import { EXPORT_CONTENT_TYPES, exportChunks, exportFileName, exportFormatOf } from '../../events/export.js';
import { parseEventFilter, parseEventPageQuery } from '../../events/query.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { Readable } from 'node:stream';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { EVENT_COUNTS_PATH, EVENTS_PATH } from '../paths.js';
import {
  countEvents,
  eventCountsOtherMethods,
  eventsOtherMethods,
  listEvents,
  preflightEventCounts,
  preflightEvents,
} from './events.schema.js';

/**
 * The app's audit log (rows of both classes) and its counts, for its admin. Needs `tesseraAuth`
 * registered in the same scope.
 */
const present = (value: string | undefined) => value !== undefined && value !== '';

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: AppEvents; clock: Clock }> = async (app, { events, clock }) => {
  app.get(EVENTS_PATH, { schema: listEvents, onRequest: requireAdmin }, async (request, reply) => {
    const { appId } = request.params;
    const context = { clientAddress: request.ip, by: request.principal };
    const format = exportFormatOf(request.query.format, request.headers.accept);
    if (format !== undefined) {
      const { cursor, limit, ...filter } = request.query;
      if (present(cursor) || present(limit))
        throw new TesseraError('invalid_request', 'An export is every event of the range: send no cursor or limit.');
      const pages = await events.export(appId, parseEventFilter(filter), context);
      return (
        reply
          .headers({
            'content-type': EXPORT_CONTENT_TYPES[format],
            'content-disposition': `attachment; filename="${exportFileName(appId, format)}"`,
          })
          // A stream is sent as it is read; the schema's types name the JSON page only.
          .send(Readable.from(exportChunks(format, pages)) as unknown as string)
      );
    }
    const page = await events.list(appId, parseEventPageQuery(request.query), context);
    return { events: page.events.map(describeEvent), nextCursor: page.nextCursor };
  });

  app.get(EVENT_COUNTS_PATH, { schema: countEvents, onRequest: requireAdmin }, async (request) => {
    const query = parseEventCountQuery(request.query, clock.now());
    return events.counts(request.params.appId, query, { clientAddress: request.ip, by: request.principal });
  });

  refuseOtherMethods(app, EVENTS_PATH, ['GET'], { method: 'POST', schema: eventsOtherMethods, preflight: preflightEvents });
  refuseOtherMethods(app, EVENT_COUNTS_PATH, ['GET'], { method: 'POST', schema: eventCountsOtherMethods, preflight: preflightEventCounts });
};
