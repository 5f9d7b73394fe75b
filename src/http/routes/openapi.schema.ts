import { Type } from 'typebox';
import { otherMethodsSchema } from '../openapi.js';

/**
 * The OpenAPI document itself: the schema of each route of `openapi.ts`, from which Fastify
 * validates its requests, serializes its answers and types its handlers, and from which
 * docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and answered by
 * `../errors.ts`.
 */

/** GET /openapi.json */
export const openapi = {
  tags: ['apps'],
  operationId: 'openapi',
  summary: 'This document',
  response: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': { schema: Type.Unknown() } } } },
};

/** POST /openapi.json */
export const openapiOtherMethods = otherMethodsSchema(
  'apps',
  'openapiOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`; no credentials are needed.',
);
