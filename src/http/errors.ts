import type { FastifyError, FastifyReply } from 'fastify';
import { appNotFound, notFound, unsupportedMediaType } from '../error-catalogue.js';
import { isTesseraError, TesseraError, type ErrorCode } from '../errors.js';

/**
 * The one place where errors become HTTP: the contract's body
 * `{"errorCode", "error", "error_description", "message"}`, its status and its headers.
 */
export function sendError(reply: FastifyReply, error: TesseraError): FastifyReply {
  return reply.code(error.status).headers(errorHeaders(error)).send(errorBody(error));
}

/** The headers of an error response: its content type and, where the error has them, a challenge, `Retry-After`, `Allow`. */
export function errorHeaders(error: TesseraError): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  const challenge =
    error.code === 'INSUFFICIENT_SCOPE'
      ? `Bearer error="insufficient_scope"${error.details.scope === undefined ? '' : `, scope="${error.details.scope}"`}`
      : CHALLENGES[error.code];
  if (challenge !== undefined) headers['www-authenticate'] = challenge;
  if (error.details.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.details.retryAfterSeconds);
  if (error.details.allow !== undefined) headers['allow'] = error.details.allow.join(', ');
  return headers;
}

export function errorBody(error: TesseraError): string {
  // Deployed SDK clients run decodeURIComponent over error bodies: a '%' would break them.
  const message = error.message.replaceAll('%', ' percent');
  return JSON.stringify({ errorCode: error.code, error: error.code, error_description: message, message });
}

const CHALLENGES: Partial<Record<ErrorCode, string>> = {
  invalid_client: 'Basic realm="tessera"',
  INVALID_TOKEN: 'Bearer error="invalid_token"',
  UNAUTHORIZED: 'Basic realm="tessera", Bearer realm="tessera"',
};

/**
 * Turns anything thrown (ours, Fastify's, a bug) into the contract's error. What the framework
 * refused goes into the error's internal detail (its code, and where a body's JSON broke), for the
 * logs: never its message, which may quote what the client sent. A bug's error is logged whole by
 * whoever answers it (`src/http/error-log.ts`).
 */
export function toTesseraError(error: unknown): TesseraError {
  if (isTesseraError(error)) return error;
  const fastifyError = error as Partial<FastifyError>;
  const { code } = fastifyError;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return withInternalDetail(unsupportedMediaType(), code);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TesseraError('REQUEST_TOO_LARGE', 'The request body is too large.', { internalDetail: code });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new TesseraError('invalid_request', 'The request body is empty; a JSON object is expected.', { internalDetail: code });
    case 'FST_ERR_BAD_URL':
      return new TesseraError('invalid_request', 'The request URL is malformed.', { internalDetail: code });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // The path parameters are the AppID (at most 64 characters) and a credential's ClientID (28):
      // one this long names nothing; an app that no AppID this long can name is not found.
      return withInternalDetail(appNotFound(), code);
  }
  const status = fastifyError.statusCode;
  if (error instanceof SyntaxError || code === 'FST_ERR_CTP_INVALID_JSON_BODY') return notJson(error as Error);
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const name = code ?? (error instanceof Error ? error.name : undefined);
    const detail = name === undefined ? undefined : `${name} (${status})`;
    if (status === 404) return withInternalDetail(notFound(), detail);
    if (status === 413) return withInternalDetail(new TesseraError('REQUEST_TOO_LARGE', 'The request is too large.'), detail);
    if (status === 415) return withInternalDetail(unsupportedMediaType(), detail);
    return withInternalDetail(new TesseraError('invalid_request', 'The request is malformed.'), detail);
  }
  return new TesseraError('INTERNAL_ERROR', 'The service failed to handle this request.');
}

/** The error, with the same code, message and details, and `detail` for the logs (the error as it is without one). */
export function withInternalDetail(error: TesseraError, detail: string | undefined): TesseraError {
  return detail === undefined ? error : new TesseraError(error.code, error.message, { ...error.details, internalDetail: detail });
}

/**
 * A body that is not JSON; for the logs, the parser's error and where the JSON broke, from its
 * message, leaving out the excerpt of the body it may quote (and with it a secret).
 */
export function notJson(parserError: Error): TesseraError {
  const where = /at position \d+(?: \(line \d+ column \d+\))?|Unexpected end of JSON input/.exec(parserError.message)?.[0];
  const detail = `${(parserError as Partial<FastifyError>).code ?? parserError.name}${where === undefined ? '' : `: ${where}`}`;
  return new TesseraError('invalid_request', 'The request body is not valid JSON.', { internalDetail: detail });
}
