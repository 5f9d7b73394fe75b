import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../auth/middleware/fastify.js';
import { TesseraError } from '../errors.js';
import type { Tessera } from '../tessera.js';
import { describeApp } from './app.js';

/** Admin features of the app itself. Needs `tesseraAuth` registered in the same scope. */
export const appRoutes: FastifyPluginAsync<{ tessera: Tessera }> = async (app, { tessera }) => {
  app.get<{ Params: { appId: string } }>('/api/apps/:appId', { onRequest: requireAdmin }, async (request) => {
    return describeApp(await tessera.appCache.require(request.params.appId));
  });

  app.route({
    method: app.supportedMethods.filter((method) => method !== 'GET' && method !== 'HEAD'),
    url: '/api/apps/:appId',
    handler: async () => {
      throw new TesseraError('METHOD_NOT_ALLOWED', 'Only GET is allowed here.', { allow: ['GET'] });
    },
  });
};
