import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { reasonOf } from 'tessera-tokens/internal/error-catalogue.js';
import type { TesseraError } from 'tessera-tokens/internal/errors.js';

/** The internal details of the errors answered, by request, for the request's own line (`LOG_REQUESTS`). */
const answeredDetails = new WeakMap<FastifyRequest, string>();

/**
 * What the logs keep of an error answered, for the API and the portal alike: a `5xx` is logged at
 * once (`request failed`), with what was thrown and the error's internal detail, but `503
 * SERVICE_UNAVAILABLE`, which the store reports once per outage; any other error's internal detail
 * waits for the request's own line (`answeredDetailOf`). Neither ever reaches the client. The
 * request is logged through the logger's `req` serializer (method, path without its query string,
 * address): no header, cookie or body.
 */
export function logAnsweredError(logger: Logger | undefined, request: FastifyRequest, thrown: unknown, answered: TesseraError): void {
  const detail = internalDetailOf(answered);
  if (answered.status >= 500 && answered.code !== 'SERVICE_UNAVAILABLE') {
    logger?.error({ err: thrown, reqId: request.id, req: request, ...(detail === undefined ? {} : { detail }) }, 'request failed');
  } else if (detail !== undefined) {
    answeredDetails.set(request, detail);
  }
}

/** The internal detail of the error this request was answered with, if it had one (for `request completed`). */
export function answeredDetailOf(request: FastifyRequest): string | undefined {
  return answeredDetails.get(request);
}

/** The error's own detail; for a `503`, what made it (the code and message the store attached). */
function internalDetailOf(error: TesseraError): string | undefined {
  if (error.details.internalDetail !== undefined) return error.details.internalDetail;
  return error.code === 'SERVICE_UNAVAILABLE' && error.cause !== undefined ? reasonOf(error) : undefined;
}
