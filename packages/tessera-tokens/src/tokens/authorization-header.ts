/** The credentials an `Authorization` header carries. */
export type AuthorizationCredentials =
  | { scheme: 'basic'; user: string; password: string }
  | { scheme: 'bearer'; token: string }
  /** Missing, another scheme, or a Basic value that is not base64 of `user:password`. */
  | { scheme: 'none' };

/** Room for `Bearer ` and the longest JWT access token (`MAX_JWT_LENGTH`). */
export const MAX_AUTHORIZATION_LENGTH = 6160;
const NONE: AuthorizationCredentials = Object.freeze({ scheme: 'none' });
const BASE64_PATTERN = /^[A-Za-z0-9+/]+={0,2}$/;

/** Parses an `Authorization` header (RFC 7235: the scheme is case-insensitive). */
export function parseAuthorization(header: string | undefined): AuthorizationCredentials {
  if (header === undefined) return NONE;
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  // A Bearer header always means "here is a token": an empty or oversized one is a malformed token.
  if (scheme === 'bearer') return { scheme: 'bearer', token: header.length > MAX_AUTHORIZATION_LENGTH ? '' : value };
  if (scheme === 'basic' && header.length <= MAX_AUTHORIZATION_LENGTH) return parseBasic(value);
  return NONE;
}

function parseBasic(encoded: string): AuthorizationCredentials {
  if (!BASE64_PATTERN.test(encoded)) return NONE;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return NONE;
  return { scheme: 'basic', user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** RFC 6749 §2.3.1: `client_secret_basic` form-encodes the ClientID and ClientSecret before base64. */
export function decodeFormComponent(value: string): string {
  try {
    return decodeURIComponent(value.replaceAll('+', ' '));
  } catch {
    return value;
  }
}
