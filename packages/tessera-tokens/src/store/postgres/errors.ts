import { serviceUnavailable } from '../../error-catalogue.js';
import { TesseraError } from '../../errors.js';

/**
 * Errors that mean "the database cannot be reached now" (class 08, PgBouncer's refusals among them,
 * shutdown, a dropped database, timeouts, sockets), or cannot take a write now: 25006, a server that became a standby or was made
 * read-only (with several hosts, connection.ts then looks for another), or a primary still being
 * promoted, which a proxy routing by Patroni's GET /primary reaches for a moment in a failover.
 */
const UNAVAILABLE_CODES = new Set([
  '25006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '3D000',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  // protocol_violation: what PgBouncer sends with its own refusals ("server login has been failing",
  // "query_wait_timeout", "server conn crashed?", "client_login_timeout (server down)"), then it
  // closes the connection: it cannot reach PostgreSQL (a failover behind it) or is overloaded.
  '08P01',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error|Connection closed|not queryable/i;

/** `503 SERVICE_UNAVAILABLE` with `Retry-After` for an error that means the database cannot be reached now; any other error as it is. */
export function unavailableOr(error: unknown): unknown {
  if (error instanceof TesseraError) return error;
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : '';
  if ((code !== undefined && UNAVAILABLE_CODES.has(code)) || UNAVAILABLE_MESSAGES.test(message) || code === '57014') {
    return withCause(serviceUnavailable(), { code, message });
  }
  return error;
}

/**
 * What made a `503`, for the logs and the start-up's message (never for the client, whose answer
 * says only that the database cannot be reached): the code and message alone, not the error, to which
 * pg may attach its connection.
 */
export function withCause(error: TesseraError, cause: { code: string | undefined; message: string }): TesseraError {
  Object.defineProperty(error, 'cause', { value: cause, enumerable: false, configurable: true });
  return error;
}

export { reasonOf } from '../../error-catalogue.js';
