import { MAX_SCOPE_LENGTH, MAX_SCOPES } from 'tessera-tokens/internal/credentials/scopes.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { BodyCredentials } from './client-credentials.js';

/** The fields of a token request, checked and typed; credentials may come from a Basic header instead. */
export interface TokenRequest extends BodyCredentials {
  /** UNIX ms, or null when absent. */
  expiresAt: number | null;
  /**
   * RFC 6749 §3.3 `scope`, as sent (undefined when absent or empty): read only for a credential's
   * token (`parseScopeParameter`), since the app's own ClientID and the anonymous client ignore it.
   */
  scope: unknown;
}

export const MAX_CREDENTIAL_LENGTH = 256;
const DECIMAL_PATTERN = /^-?[0-9]{1,20}$/;

/**
 * Parses a token request body: a JSON object (from `application/json` or the SDKs' vendor type) or a
 * form (`URLSearchParams`, where every value is a string and a repeated field is an error, RFC 6749
 * §3.2). Unknown fields are ignored.
 */
export function parseTokenRequest(body: unknown, options: { grantTypeRequired: boolean }): TokenRequest {
  const form = body instanceof URLSearchParams;
  const read = fieldReader(body);
  const grantType = read('grant_type');
  // RFC 6749 §3.2: a parameter sent without a value is treated as omitted.
  if (grantType === undefined || grantType === null || grantType === '') {
    // Deployed SDK clients log users and things in with a username and a password and no grant_type.
    if (read('username') !== undefined || read('password') !== undefined) throw unsupportedGrantType();
    if (options.grantTypeRequired) throw invalidRequest('grant_type is required; use "client_credentials".');
  } else if (typeof grantType !== 'string') {
    throw invalidRequest('grant_type must be a string.');
  } else if (grantType !== 'client_credentials') {
    throw unsupportedGrantType();
  }
  return {
    clientId: credential(read('client_id'), 'client_id'),
    clientSecret: credential(read('client_secret'), 'client_secret'),
    expiresAt: expiresAt(read('expiresAt'), form),
    scope: presentOrUndefined(read('scope')),
  };
}

type FieldReader = (name: string) => unknown;

function fieldReader(body: unknown, expected = 'a JSON object with grant_type, client_id and client_secret'): FieldReader {
  if (body instanceof URLSearchParams) {
    return (name) => {
      const values = body.getAll(name);
      if (values.length > 1) throw invalidRequest(`${name} must not be repeated.`);
      return values[0];
    };
  }
  if (body === undefined || body === null) {
    throw invalidRequest(`The request body is required: ${expected}.`);
  }
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object.');
  }
  const fields = body as Record<string, unknown>;
  return (name) => (Object.hasOwn(fields, name) ? fields[name] : undefined);
}

function credential(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalidRequest(`${name} must be a string.`);
  if (value.length > MAX_CREDENTIAL_LENGTH) throw invalidRequest(`${name} is longer than ${MAX_CREDENTIAL_LENGTH} characters.`);
  return value;
}

/** Room for `MAX_SCOPES` scopes of `MAX_SCOPE_LENGTH` characters and the spaces between them. */
const MAX_SCOPE_PARAMETER_LENGTH = MAX_SCOPES * (MAX_SCOPE_LENGTH + 1);

function presentOrUndefined(value: unknown): unknown {
  return value === null || value === '' ? undefined : value;
}

/** A token request's `scope` for a credential's token: a string of at most `MAX_SCOPE_PARAMETER_LENGTH` characters, or `invalid_scope`. */
export function parseScopeParameter(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new TesseraError('invalid_scope', 'scope must be a string: scopes separated by spaces.');
  if (value.length > MAX_SCOPE_PARAMETER_LENGTH) {
    throw new TesseraError('invalid_scope', `scope is longer than ${MAX_SCOPE_PARAMETER_LENGTH} characters.`);
  }
  return value;
}

function expiresAt(value: unknown, form: boolean): number | null {
  if (value === undefined || value === null || (form && value === '')) return null;
  let instant: number;
  if (typeof value === 'number' && !form) {
    instant = value;
  } else if (form && typeof value === 'string' && DECIMAL_PATTERN.test(value)) {
    // A form carries every value as a string; a JSON body must send a number.
    instant = Number(value);
  } else {
    throw invalidRequest('expiresAt must be an integer: UNIX time in milliseconds, UTC.');
  }
  if (!Number.isSafeInteger(instant)) throw invalidRequest('expiresAt must be an integer: UNIX time in milliseconds, UTC.');
  if (instant < 0) throw invalidRequest('expiresAt must not be negative.');
  return instant;
}

/**
 * The `token` parameter of a revocation (RFC 7009) or introspection (RFC 7662) request, from a form
 * or a JSON object; `token_type_hint` and other fields are ignored, as the RFCs allow.
 */
export function parseTokenParameter(body: unknown): string {
  const token = fieldReader(body, 'a form or JSON object with the token parameter')('token');
  if (token === undefined || token === null || token === '') throw invalidRequest('The token parameter is required.');
  if (typeof token !== 'string') throw invalidRequest('token must be a string.');
  return token;
}

function unsupportedGrantType(): TesseraError {
  return new TesseraError(
    'unsupported_grant_type',
    'Only grant_type "client_credentials" is served here: admin tokens (ClientID and ClientSecret) and anonymous tokens ' +
      '(AppID and AppKey). User and thing logins (username and password) are not.',
  );
}

/**
 * The client credentials a revocation or introspection request carries in its body (RFC 6749
 * `client_secret_post`), from a form or a JSON object; none when there is no body.
 */
export function parseBodyCredentials(body: unknown): BodyCredentials {
  if (body === undefined || body === null) return { clientId: undefined, clientSecret: undefined };
  const read = fieldReader(body);
  return { clientId: credential(read('client_id'), 'client_id'), clientSecret: credential(read('client_secret'), 'client_secret') };
}

function invalidRequest(message: string): TesseraError {
  return new TesseraError('invalid_request', message);
}
