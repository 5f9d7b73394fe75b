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

/** An admin token whose scopes do not include the one a feature needs (RFC 6750 `insufficient_scope`). */
export function insufficientScope(scope: string | undefined): TesseraError {
  return new TesseraError(
    'INSUFFICIENT_SCOPE',
    scope === undefined
      ? 'This admin token has scopes, and none of them allows this.'
      : `This admin token does not have the scope this needs: ${scope}.`,
    scope === undefined ? {} : { scope },
  );
}

/** What only the operator may do (the CLI): refused to anyone else, and to a request that names nobody. */
export function operatorRequired(): TesseraError {
  return new TesseraError('FORBIDDEN', 'Only the operator of this service may do this (the tessera CLI).');
}

/** A bearer token that is malformed, unknown, forged, expired, revoked, or of another app: which one is not told. */
export function invalidToken(): TesseraError {
  return new TesseraError('INVALID_TOKEN', 'The access token is invalid, expired or revoked.');
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

/** The store could not be reached (`serviceUnavailable`): the same work may well succeed later. */
export function isServiceUnavailable(error: unknown): boolean {
  return error instanceof TesseraError && error.code === 'SERVICE_UNAVAILABLE';
}

/**
 * The code and message of what made a `503` (the cause a store attaches to it), or of any other
 * error: for the logs, never for the client.
 */
export function reasonOf(error: unknown): string {
  const cause = error instanceof TesseraError ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const { code, message } = (cause ?? error) as { code?: string; message?: string };
  const text = message ?? String(error);
  return code === undefined || text.includes(code) ? text : `${text} (${code})`;
}

export function developerNotFound(): TesseraError {
  return new TesseraError('DEVELOPER_NOT_FOUND', 'No developer has this email address.');
}

/** A one-time link that is unknown, used, replaced or expired: which one is not told. */
export function invalidLink(): TesseraError {
  return new TesseraError('INVALID_LINK', 'This link does not work: it was used already, replaced by a newer one, or has expired.');
}

/** A wrong password, an unknown email or an account that cannot sign in: all the same answer. */
export function invalidCredentials(): TesseraError {
  return new TesseraError('INVALID_CREDENTIALS', 'The email address or the password is wrong.');
}

/** A form that may be sent once (`src/once-claims.ts`) sent again, or opened too long ago. */
export function formSentAlready(): TesseraError {
  return new TesseraError(
    'CONFLICT',
    'This form was sent already (a reload of the page that answered it sends it again), or it was opened over an hour ago. ' +
      'Nothing was done this time, and what the first send did stands: a new app is in your apps, a rotation is done. ' +
      'A secret it showed cannot be shown again: if you did not copy it, rotate it on its app\u2019s page.',
  );
}
