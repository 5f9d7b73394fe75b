import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { checkAdminScope } from '../../app-access.js';
import { describeApp } from 'tessera-tokens/internal/apps/app.js';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { parseConfigurationChanges } from 'tessera-tokens/internal/apps/configuration.js';
import type { AppService } from '../../apps/service.js';
import { acceptJsonBodies } from '../content-types.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { APP_PATH, CONFIGURATION_PATH } from '../paths.js';
import {
  appOtherMethods,
  changeConfiguration,
  configurationOtherMethods,
  describeApp as describeAppSchema,
  getConfiguration,
  preflightApp,
  preflightConfiguration,
} from './app.schema.js';

/**
 * The one body larger than a token request: `allowedOrigins` may hold 100 origins of 300 characters
 * (`apps/origins.ts`), about 31 KB of JSON. Only the app's admin gets this far (the limit applies after
 * authentication, which runs on `onRequest`).
 */
export const CONFIGURATION_BODY_LIMIT_BYTES = 32 * 1024;

/** Admin features of the app itself. Needs `tesseraAuth` registered in the same scope. */
export const appRoutes: FastifyPluginAsyncTypebox<{ apps: AppCache; appService: AppService }> = async (app, { apps, appService }) => {
  // RFC 7396's media type for a JSON merge patch, parsed as JSON.
  acceptJsonBodies(app, 'application/merge-patch+json');

  app.get(APP_PATH, { schema: describeAppSchema, onRequest: requireAdmin }, async (request) => {
    checkAdminScope(request.principal, 'view_app');
    return describeApp(await apps.require(request.params.appId));
  });

  app.get(CONFIGURATION_PATH, { schema: getConfiguration, onRequest: requireAdmin }, async (request) => {
    checkAdminScope(request.principal, 'view_configuration');
    return (await apps.require(request.params.appId)).configuration;
  });

  app.patch(
    CONFIGURATION_PATH,
    { schema: changeConfiguration, onRequest: requireAdmin, bodyLimit: CONFIGURATION_BODY_LIMIT_BYTES },
    async (request) => {
      return appService.configure(request.params.appId, parseConfigurationChanges(request.body), {
        clientAddress: request.ip,
        by: request.principal,
      });
    },
  );

  refuseOtherMethods(app, APP_PATH, ['GET'], { method: 'PUT', schema: appOtherMethods, preflight: preflightApp });
  refuseOtherMethods(app, CONFIGURATION_PATH, ['GET', 'PATCH'], {
    method: 'PUT',
    schema: configurationOtherMethods,
    preflight: preflightConfiguration,
  });
};
