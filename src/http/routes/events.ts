import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppEvents } from '../../apps/events.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { parseEventCountQuery } from '../../events/counts.js';
import { describeEvent } from '../../events/event.js';
import { parseEventPageQuery } from '../../events/query.js';
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
export const eventRoutes: FastifyPluginAsyncTypebox<{ events: AppEvents; clock: Clock }> = async (app, { events, clock }) => {
  app.get(EVENTS_PATH, { schema: listEvents, onRequest: requireAdmin }, async (request) => {
    const query = parseEventPageQuery(request.query);
    const page = await events.list(request.params.appId, query, { clientAddress: request.ip, by: request.principal });
    return { events: page.events.map(describeEvent), nextCursor: page.nextCursor };
  });

  app.get(EVENT_COUNTS_PATH, { schema: countEvents, onRequest: requireAdmin }, async (request) => {
    const query = parseEventCountQuery(request.query, clock.now());
    return events.counts(request.params.appId, query, { clientAddress: request.ip, by: request.principal });
  });

  refuseOtherMethods(app, EVENTS_PATH, ['GET'], { method: 'POST', schema: eventsOtherMethods, preflight: preflightEvents });
  refuseOtherMethods(app, EVENT_COUNTS_PATH, ['GET'], { method: 'POST', schema: eventCountsOtherMethods, preflight: preflightEventCounts });
};
