import { TesseraError } from './errors.js';

/**
 * The errors raised in more than one place, each with its one message, so that every place answers
 * the same words (as node-oidc-provider's one catalogue of errors does). An error raised in one
 * place only keeps its message where it is raised.
 */

/** How long a caller is asked to wait (`Retry-After`) while the database cannot be reached. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

export function adminRequired(): TesseraError {
  return new TesseraError('ADMIN_REQUIRED', 'This is an admin feature: it needs an app admin token.');
}

export function appNotFound(): TesseraError {
  return new TesseraError('APP_NOT_FOUND', 'No app has this AppID.');
}

export function notFound(): TesseraError {
  return new TesseraError('NOT_FOUND', 'No such resource.');
}

export function unsupportedMediaType(): TesseraError {
  return new TesseraError('UNSUPPORTED_MEDIA_TYPE', 'This Content-Type is not supported here.');
}

export function serviceUnavailable(): TesseraError {
  return new TesseraError('SERVICE_UNAVAILABLE', 'The service cannot reach its database right now; try again shortly.', {
    retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
  });
}
