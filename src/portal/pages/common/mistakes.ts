import type { FastifyReply } from 'fastify';
import { isTesseraError, type ErrorCode, type TesseraError } from 'tessera-tokens/internal/errors.js';

// How a page's handler tells a refusal it shows on the form (beside what was typed) from one the
// portal's error page shows: by the error's code, never by its words.

/** The message of a mistake in what was typed (`invalid_request`, the domain's code for it), for the form; anything else is thrown on. */
export function mistakeIn(error: unknown): string {
  return refusalIn(error, ['invalid_request']).message;
}

/** The error, if its code is one of `codes`, which the form shows; anything else is thrown on, to the error page. */
export function refusalIn(error: unknown, codes: readonly ErrorCode[]): TesseraError {
  if (isTesseraError(error) && codes.includes(error.code)) return error;
  throw error;
}

/** A refusal that asks the browser to wait (`TOO_MANY_REQUESTS`) says how long, as the API's do (`Retry-After`). */
export function retryAfter(reply: FastifyReply, error: TesseraError): void {
  if (error.details.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.details.retryAfterSeconds));
}
