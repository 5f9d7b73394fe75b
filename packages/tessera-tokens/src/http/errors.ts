import type { FastifyError, FastifyReply, FastifySchemaValidationError } from 'fastify';
import { appNotFound, notFound, unsupportedMediaType } from '../error-catalogue.js';
import { ERROR_STATUS, isTesseraError, TesseraError, type ErrorCode } from '../errors.js';
import { listByPrefix, quoted } from '../text.js';

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

/** What Ajv tells of a problem with `verbose`: the schema that has the failing keyword, and the value. */
type VerboseError = FastifySchemaValidationError & { parentSchema?: Record<string, unknown>; data?: unknown };

/** What a schema's `type` names, as a message says it. */
const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  array: 'an array',
  object: 'a JSON object',
  null: 'null',
};

/** What a schema's `format` names, as a message says it. */
const FORMAT_WORDS: Record<string, string> = {
  'date-time': 'a date-time (RFC 3339, such as 2026-01-31T12:00:00Z)',
  uri: 'a URI',
};

/** Where a request's value was refused, as a message names it. */
const PARTS: Record<string, string> = { body: 'the request body', querystring: 'the query', headers: 'the headers', params: 'the path' };

/**
 * A request that a route's schema refused (Fastify's `schemaErrorFormatter`; with `allErrors` off,
 * the first problem found), as the contract's error: `400 invalid_request` whose message starts with
 * the field's name and says what is wrong with it, never the value sent (only a name the client
 * gave, quoted). A schema may name the code of its refusals (`x-error-code`, as `scope` of a token
 * request is `invalid_scope`) and what an unknown field of it is called (`x-field-name`, "Unknown
 * configuration field"). A path parameter of a form no resource has names nothing: `404`.
 */
export function schemaRefusal(errors: FastifySchemaValidationError[], part: string): TesseraError {
  const error: VerboseError | undefined = errors[0];
  const detail = `schema: ${part}${error?.instancePath ?? ''} ${error?.keyword ?? ''}`;
  if (part === 'params') {
    const parameter = error?.instancePath.split('/')[1];
    return withInternalDetail(parameter === 'appId' ? appNotFound() : notFound(), detail);
  }
  if (error === undefined)
    return new TesseraError('invalid_request', `The request is malformed (${PARTS[part] ?? part}).`, { internalDetail: detail });
  const named = error.parentSchema?.['x-error-code'];
  const code: ErrorCode = typeof named === 'string' && isErrorCode(named) ? named : 'invalid_request';
  return new TesseraError(code, refusalMessage(error, part), { internalDetail: detail });
}

function refusalMessage(error: VerboseError, part: string): string {
  const { params } = error;
  const path = error.instancePath.split('/').slice(1);
  if (error.keyword === 'additionalProperties') {
    const named = error.parentSchema?.['x-field-name'];
    const noun = typeof named === 'string' ? named : part === 'querystring' ? 'query parameter' : part === 'headers' ? 'header' : 'field';
    return `Unknown ${noun} ${quoted(String(params.additionalProperty))}.`;
  }
  if (error.keyword === 'required') path.push(String(params.missingProperty));
  if (path.length === 0) {
    if (error.keyword === 'type') return `${capitalized(PARTS[part] ?? part)} must be ${words(params.type)}.`;
    if (error.keyword === 'minProperties') return `${capitalized(PARTS[part] ?? part)} must have at least ${String(params.limit)} field.`;
    return `${capitalized(PARTS[part] ?? part)} is malformed (${error.keyword}).`;
  }
  // The field by its name; a part of it by where it is: `scopes entry 2`.
  const [first, ...rest] = path;
  const field = [first, ...rest.map((segment) => (/^[0-9]+$/.test(segment) ? `entry ${Number(segment) + 1}` : `field ${segment}`))].join(
    ' ',
  );
  switch (error.keyword) {
    case 'required':
      return `${field} is required.`;
    case 'type':
      // A query parameter is a string, or an array of the strings sent when it is repeated.
      return part === 'querystring' ? `${field} must not be repeated.` : `${field} must be ${words(params.type)}.`;
    case 'enum':
      if (typeof error.parentSchema?.['x-field-name'] === 'string' && typeof error.data === 'string') {
        const noun = error.parentSchema['x-field-name'];
        const known = (params.allowedValues as unknown[]).filter((value) => value !== '');
        return `Unknown ${noun} ${quoted(error.data)}; the ${noun}s are: ${listByPrefix(known.map(String))}.`;
      }
    // falls through
    case 'const': {
      const allowed = error.keyword === 'enum' ? (params.allowedValues as unknown[]) : [params.allowedValue];
      return `${field} must be ${allowed
        .map((value) => JSON.stringify(value))
        .join(', ')
        .replace(/, ([^,]*)$/, ' or $1')}.`;
    }
    case 'format':
      return `${field} must be ${FORMAT_WORDS[String(params.format)] ?? String(params.format)}.`;
    case 'pattern':
      return `${field} must be of the form ${String(params.pattern)}.`;
    case 'maxLength':
      return `${field} must be at most ${String(params.limit)} characters long.`;
    case 'minLength':
      return params.limit === 1 ? `${field} must not be empty.` : `${field} must be at least ${String(params.limit)} characters long.`;
    case 'maxItems':
      return `${field} must have at most ${String(params.limit)} entries.`;
    case 'minItems':
      return `${field} must have at least ${String(params.limit)} entries.`;
    case 'maximum':
    case 'minimum':
      return `${field} must be ${error.keyword === 'maximum' ? 'at most' : 'at least'} ${String(params.limit)}.`;
    default:
      return `${field} is malformed (${error.keyword}).`;
  }
}

function isErrorCode(name: string): name is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, name);
}

function words(type: unknown): string {
  return String(type)
    .split(',')
    .map((name) => TYPE_WORDS[name] ?? name)
    .join(' or ');
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
