import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

/**
 * The schemas of a path's methods that are not served, for docs/openapi.json (each path's own
 * `*.schema.ts`): `documented` is the one method that stands for all of them in the document, and
 * `preflight` the `OPTIONS` route's (`preflightSchema`), whose CORS preflights `cors.ts` answers.
 */
export interface OtherMethodsDocumentation {
  method: string;
  schema: object;
  preflight?: object;
}

/**
 * Answers every method but `allowed` on `url` with `405` and `Allow`. HEAD goes with GET, in `Allow` too.
 * `documentation`, when given, is what the document says of them.
 */
export function refuseOtherMethods(
  app: FastifyInstance,
  url: string,
  allowed: readonly string[],
  documentation?: OtherMethodsDocumentation,
): void {
  const allow = allowed.flatMap((method) => (method === 'GET' ? ['GET', 'HEAD'] : [method]));
  const refusal = new Set(allow);
  const handler = async () => {
    throw new TesseraError('METHOD_NOT_ALLOWED', `Only ${allowed.join(', ')} ${allowed.length > 1 ? 'are' : 'is'} allowed here.`, {
      allow,
    });
  };
  const schemas: Record<string, object> = {};
  if (documentation !== undefined) {
    schemas[documentation.method] = documentation.schema;
    if (documentation.preflight !== undefined) schemas.OPTIONS = documentation.preflight;
  }
  routeEveryMethod(
    app,
    url,
    handler,
    schemas,
    app.supportedMethods.filter((method) => !refusal.has(method)),
  );
}

/**
 * `handler` for `methods` (by default every method) at `url`: each method in `schemas` as a route of
 * its own with its schema, the others together as one route without any, so that the document has
 * one operation for them all. HEAD stays with the others: it is never documented.
 */
export function routeEveryMethod(
  app: FastifyInstance,
  url: string,
  handler: RouteHandlerMethod,
  schemas: Record<string, object>,
  methods: readonly string[] = app.supportedMethods,
): void {
  for (const [method, schema] of Object.entries(schemas)) {
    app.route({ method, url, schema, exposeHeadRoute: false, handler });
  }
  const rest = methods.filter((method) => !Object.hasOwn(schemas, method));
  if (rest.length > 0) app.route({ method: rest, url, handler });
}
