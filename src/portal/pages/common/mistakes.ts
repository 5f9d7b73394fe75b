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

/** A mistake shown on a form that marks its fields: the field it is about, if one, and its words. */
export interface FieldMistake<Field extends string> {
  field?: Field;
  message: string;
}

/** A mistake the page finds itself in what was typed, in its own words. */
export class FormMistake<Field extends string> extends Error {
  constructor(
    readonly field: Field,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The status and the words of a mistake a form with fields is shown again with: the page's own
 * (`FormMistake`); `invalid_request` naming one of the form's fields, in the form's words
 * (`fieldWords`: the service's message starts with the API's name of it, `url must be…`); the
 * other refusals of `codes` as they are, marking their field when they name one. Anything else is
 * thrown on.
 */
export function fieldMistakeOf<Field extends string>(
  error: unknown,
  fieldWords: Readonly<Record<Field, string>>,
  codes: readonly ErrorCode[],
): [number, FieldMistake<Field>] {
  if (error instanceof FormMistake) return [400, { field: error.field as Field, message: error.message }];
  const refused = refusalIn(error, ['invalid_request', ...codes]);
  const named = refused.details.field;
  const field = named !== undefined && Object.hasOwn(fieldWords, named) ? (named as Field) : undefined;
  if (field === undefined) return [refused.status, { message: refused.message }];
  if (refused.code !== 'invalid_request') return [refused.status, { field, message: refused.message }];
  return [400, { field, message: `${fieldWords[field]}${refused.message.slice(field.length)}` }];
}
