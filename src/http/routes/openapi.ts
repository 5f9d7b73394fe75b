import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { PACKAGE_ROOT } from '../../package-root.js';
import { refuseOtherMethods } from '../methods.js';
import { OPENAPI_PATH } from '../paths.js';
import { openapi as openapiSchema, openapiOtherMethods } from './openapi.schema.js';

/** `GET /openapi.json`: the API's description (docs/openapi.json, generated from the routes: `../openapi.ts`), read once at start-up. */
export const openapiRoute: FastifyPluginAsync = async (app) => {
  const openapi = readFileSync(join(PACKAGE_ROOT, 'docs', 'openapi.json'), 'utf8');
  app.get(OPENAPI_PATH, { schema: openapiSchema }, async (_request, reply) => reply.type('application/json; charset=utf-8').send(openapi));
  refuseOtherMethods(app, OPENAPI_PATH, ['GET'], { method: 'POST', schema: openapiOtherMethods });
};
