import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { TesseraError } from '../errors.js';

/**
 * What the logs keep of an error answered, for the API and the portal alike: a `5xx` is logged at
 * once (`request failed`) with what was thrown, but `503 SERVICE_UNAVAILABLE`, which the store
 * reports once per outage. The request is logged through the logger's `req` serializer (method,
 * path without its query string, address): no header, cookie or body.
 */
export function logAnsweredError(logger: Logger | undefined, request: FastifyRequest, thrown: unknown, answered: TesseraError): void {
  if (answered.status >= 500 && answered.code !== 'SERVICE_UNAVAILABLE') {
    logger?.error({ err: thrown, reqId: request.id, req: request }, 'request failed');
  }
}
