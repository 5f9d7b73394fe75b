import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../auth/middleware/fastify.js';
import { acceptJsonBodies } from '../http/content-types.js';
import { refuseOtherMethods } from '../http/methods.js';
import type { Tessera } from '../tessera.js';
import { describeApp } from './app.js';

export const APP_PATH = '/api/apps/:appId';
export const CONFIGURATION_PATH = '/api/apps/:appId/configuration';

type AppParams = { Params: { appId: string } };

/** Admin features of the app itself. Needs `tesseraAuth` registered in the same scope. */
export const appRoutes: FastifyPluginAsync<{ tessera: Tessera }> = async (app, { tessera }) => {
  // RFC 7396's media type for a JSON merge patch, parsed as JSON.
  acceptJsonBodies(app, 'application/merge-patch+json');

  app.get<AppParams>(APP_PATH, { onRequest: requireAdmin }, async (request) => {
    return describeApp(await tessera.appCache.require(request.params.appId));
  });

  app.get<AppParams>(CONFIGURATION_PATH, { onRequest: requireAdmin }, async (request) => {
    return (await tessera.appCache.require(request.params.appId)).configuration;
  });

  app.patch<AppParams>(CONFIGURATION_PATH, { onRequest: requireAdmin }, async (request) => {
    return tessera.apps.configure(request.params.appId, request.body, { clientAddress: request.ip });
  });

  refuseOtherMethods(app, APP_PATH, ['GET']);
  refuseOtherMethods(app, CONFIGURATION_PATH, ['GET', 'PATCH']);
};
