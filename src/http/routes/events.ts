import type { FastifyPluginAsync } from 'fastify';
import type { AppEvents } from '../../apps/events.js';
import type { Clock } from '../../clock.js';
import { TesseraError } from '../../errors.js';
import { parseEventCountQuery } from '../../events/counts.js';
import { describeEvent } from '../../events/event.js';
import { parseEventPageQuery } from '../../events/query.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from '../middleware/fastify.js';
import { EVENT_COUNTS_PATH, EVENTS_PATH } from '../paths.js';

type EventsRequest = {
  Params: { appId: string };
  Querystring: Record<string, string | string[] | undefined>;
};

/**
 * The app's audit log (rows of both classes) and its counts, for its admin. Needs `tesseraAuth`
 * registered in the same scope.
 */
export const eventRoutes: FastifyPluginAsync<{ events: AppEvents; clock: Clock }> = async (app, { events, clock }) => {
  app.get<EventsRequest>(EVENTS_PATH, { onRequest: requireAdmin }, async (request) => {
    const { type, cursor, limit, since, until, reason, clientAddress } = request.query;
    const query = parseEventPageQuery({
      type: single(type, 'type'),
      cursor: single(cursor, 'cursor'),
      limit: single(limit, 'limit'),
      since: single(since, 'since'),
      until: single(until, 'until'),
      reason: single(reason, 'reason'),
      clientAddress: single(clientAddress, 'clientAddress'),
    });
    const page = await events.list(request.params.appId, query, { clientAddress: request.ip, by: request.principal });
    return { events: page.events.map(describeEvent), nextCursor: page.nextCursor };
  });

  app.get<EventsRequest>(EVENT_COUNTS_PATH, { onRequest: requireAdmin }, async (request) => {
    const { per, since, until } = request.query;
    const query = parseEventCountQuery(
      { per: single(per, 'per'), since: single(since, 'since'), until: single(until, 'until') },
      clock.now(),
    );
    return events.counts(request.params.appId, query, { clientAddress: request.ip, by: request.principal });
  });

  refuseOtherMethods(app, EVENTS_PATH, ['GET']);
  refuseOtherMethods(app, EVENT_COUNTS_PATH, ['GET']);
};

function single(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new TesseraError('invalid_request', `${name} must not be repeated.`);
  return value;
}
