/**
 * The one error type of the service. Domain code throws it; `src/http/errors.ts` maps it to the
 * contract's JSON body, status and headers in one place.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unsupported_grant_type: 400,
  unauthorized_client: 400,
  invalid_scope: 400,
  ME_NOT_ALLOWED_FOR_ADMIN: 400,
  invalid_client: 401,
  INVALID_TOKEN: 401,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  ATTESTATION_REQUIRED: 401,
  ATTESTATION_INVALID: 401,
  BASIC_ANONYMOUS_DISABLED: 401,
  ADMIN_REQUIRED: 403,
  INSUFFICIENT_SCOPE: 403,
  ORIGIN_NOT_ALLOWED: 403,
  FORBIDDEN: 403,
  APP_LIMIT_REACHED: 403,
  APP_NOT_FOUND: 404,
  NOT_FOUND: 404,
  DEVELOPER_NOT_FOUND: 404,
  INVALID_LINK: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  REQUEST_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetails {
  /** For TOO_MANY_REQUESTS and SERVICE_UNAVAILABLE: when the caller may try again. */
  retryAfterSeconds?: number;
  /** For METHOD_NOT_ALLOWED: the methods the resource does allow. */
  allow?: readonly string[];
  /**
   * For TOO_MANY_REQUESTS of the limits on failed admin attempts: which one refused, the address's
   * own or the app's ceiling (recorded as `token.throttled`'s reason; never sent to the client).
   */
  adminLimit?: AdminLimit;
  /** For INSUFFICIENT_SCOPE: the scope the feature needs (RFC 6750 §3's `scope` attribute). */
  scope?: string;
  /**
   * The field of the request a refusal is about, by its name in the API (`expiresAt`), for a form
   * to mark that field and say it in its own words; the message then starts with that name
   * (`expiresAt is in the past…`), unless the refusal is not about what was typed but who typed
   * it (`FORBIDDEN`). Never sent to the client as such: the message says it.
   */
  field?: string;
  /**
   * For the logs only (node-oidc-provider's `error_detail`): what the message does not tell the
   * client, such as which of the framework's checks refused the request. Logged with the request's
   * line when the error is answered (`src/http/error-log.ts`), never sent to the client; so never a
   * secret either, nor anything the client sent that could hold one (a body, a query string).
   */
  internalDetail?: string;
}

/** The two limits on failed admin attempts: per app and address, and per app from every address. */
export type AdminLimit = 'address' | 'app';

export class TesseraError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
    this.name = 'TesseraError';
    this.status = ERROR_STATUS[code];
  }
}

export function isTesseraError(value: unknown): value is TesseraError {
  return value instanceof TesseraError;
}
