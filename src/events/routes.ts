import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../auth/middleware/fastify.js';
import { TesseraError } from '../errors.js';
import { refuseOtherMethods } from '../http/methods.js';
import type { Tessera } from '../tessera.js';
import { describeEvent } from './event.js';

export const EVENTS_PATH = '/api/apps/:appId/events';

type EventsRequest = {
  Params: { appId: string };
  Querystring: Record<string, string | string[] | undefined>;
};

/** The app's audit log, for its admin. Needs `tesseraAuth` registered in the same scope. */
export const eventRoutes: FastifyPluginAsync<{ tessera: Tessera }> = async (app, { tessera }) => {
  app.get<EventsRequest>(EVENTS_PATH, { onRequest: requireAdmin }, async (request) => {
    const { type, cursor, limit } = request.query;
    const page = await tessera.events.list(request.params.appId, {
      type: single(type, 'type'),
      cursor: single(cursor, 'cursor'),
      limit: limitOf(single(limit, 'limit')),
    });
    return { events: page.events.map(describeEvent), nextCursor: page.nextCursor };
  });

  refuseOtherMethods(app, EVENTS_PATH, ['GET']);
};

function single(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new TesseraError('invalid_request', `${name} must not be repeated.`);
  return value === '' ? undefined : value;
}

function limitOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  return /^[0-9]{1,4}$/.test(value) ? Number(value) : NaN;
}
