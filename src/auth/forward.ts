import { TesseraError } from 'tessera-tokens/internal/errors.js';

/** An admin-only resource for forward authentication: a path prefix under the app, for one method or all. */
export interface AdminPathRule {
  /** Upper case; a `GET` rule also covers `HEAD`. Undefined: every method. */
  method: string | undefined;
  /** Lower-cased segments after `/api/apps/{appId}`; empty: the whole app. */
  segments: string[];
}

/** What forward authentication checks: the app, and where the original request goes within it. */
export interface ForwardedTarget {
  appId: string;
  /** Percent-decoded segments after `/api/apps/{appId}` (a trailing slash adds none). */
  segments: string[];
  /** The original path as sent, without its query, for the `/me` rule. */
  path: string;
}

const RULE_PATTERN = /^(?:([A-Za-z]+)\s+)?(\/\S*)$/;
const APPS_PREFIX = '/api/apps/';

/**
 * Parses `FORWARD_AUTH_ADMIN_PATHS` entries: `/prefix` (any method) or `METHOD /prefix`, the prefix
 * relative to `/api/apps/{appId}` and matched on whole segments (`/events` covers `/events` and
 * `/events/1`, not `/eventsx`), case-insensitively. Throws an Error naming a bad entry.
 */
export function parseAdminPathRules(entries: readonly string[]): AdminPathRule[] {
  return entries.map((entry) => {
    const match = RULE_PATTERN.exec(entry.trim());
    const segments = match?.[2]!.split('/').filter((segment) => segment !== '');
    // Spelled out, as the original URIs it is compared with must be.
    if (match === null || segments === undefined || segments.some((segment) => /^\.\.?$|[%;\\]/.test(segment))) {
      throw new Error(`"${entry}" is not a path prefix like "/admin" or "DELETE /objects" (no "%", ";", "\\", "." or ".." segments)`);
    }
    return { method: match[1]?.toUpperCase(), segments: segments.map((segment) => segment.toLowerCase()) };
  });
}

/**
 * Whether a rule makes this request admin-only. Segments compare case-insensitively and `GET` covers
 * `HEAD`, because upstream routers do so (Express matches paths case-insensitively by default, and
 * Express and Fastify answer `HEAD` with the `GET` handler): a rule must cover every spelling that
 * reaches the handler it protects.
 */
export function isAdminPath(rules: readonly AdminPathRule[], method: string, segments: readonly string[]): boolean {
  if (rules.length === 0) return false;
  const upper = method.toUpperCase();
  return rules.some(
    (rule) =>
      (rule.method === undefined || rule.method === upper || (rule.method === 'GET' && upper === 'HEAD')) &&
      rule.segments.length <= segments.length &&
      rule.segments.every((segment, index) => segments[index]!.toLowerCase() === segment),
  );
}

/**
 * The app and path that an original request URI (`/api/apps/{appId}/...?query`) addresses. Tessera
 * does not normalize it: upstream servers disagree on how to (some resolve `..` or decode `%2F`,
 * others do not), and a URI read one way here and another way upstream would admit a request for
 * one app, or past one rule, with an answer made for another. So any URI that an upstream could
 * read two ways is refused with `400`, and what is left has one reading.
 */
export function resolveForwardedTarget(uri: string): ForwardedTarget {
  if (/[^\x21-\x7e]|[\\#]/.test(uri)) {
    throw ambiguous('it has a control character, a space, a non-ASCII byte, a backslash or a "#"');
  }
  const query = uri.indexOf('?');
  const path = query < 0 ? uri : uri.slice(0, query);
  if (!path.startsWith(APPS_PREFIX)) {
    throw new TesseraError('invalid_request', 'The original URI is not under /api/apps/{appId}/.');
  }
  const raw = path.slice(APPS_PREFIX.length).split('/');
  if (raw[0] === '') throw new TesseraError('invalid_request', 'The original URI is not under /api/apps/{appId}/.');
  // A trailing slash is one reading for every router; an empty segment elsewhere is not.
  if (raw.length > 1 && raw[raw.length - 1] === '') raw.pop();
  const segments = raw.map(decodeSegment);
  return { appId: segments[0]!, segments: segments.slice(1), path };
}

/** One segment, percent-decoded, or the reason it could be read two ways. */
function decodeSegment(segment: string): string {
  if (segment === '') throw ambiguous('it has an empty segment ("//")');
  if (segment === '.' || segment === '..') throw ambiguous('it has a "." or ".." segment');
  if (segment.includes(';')) throw ambiguous('it has a ";" path parameter');
  if (!segment.includes('%')) return segment;
  for (const escape of segment.matchAll(/%(.{0,2})/g)) {
    const hex = escape[1]!;
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new TesseraError('invalid_request', 'The original URI has malformed percent-encoding.');
    const reason = ambiguityOf(Number.parseInt(hex, 16), segment, escape.index);
    if (reason !== undefined) throw ambiguous(reason);
  }
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new TesseraError('invalid_request', 'The original URI has malformed percent-encoding (not UTF-8).');
  }
}

/** Why a percent-encoded byte can be read two ways, or undefined if it cannot. */
function ambiguityOf(byte: number, segment: string, index: number): string | undefined {
  const char = String.fromCharCode(byte);
  if (/[A-Za-z0-9._~-]/.test(char)) return `it percent-encodes "${char}", which needs no encoding`;
  if (char === '/' || char === '\\') return 'it has an encoded slash or backslash';
  if (char === ';') return 'it has an encoded ";"';
  if (byte < 0x20 || byte === 0x7f) return 'it has an encoded control character';
  if (char === '%' && /^[0-9A-Fa-f]{2}$/.test(segment.slice(index + 3, index + 5)))
    return 'it encodes a percent sign before two hex digits, which a second decoding would read';
  return undefined;
}

function ambiguous(reason: string): TesseraError {
  return new TesseraError(
    'invalid_request',
    `The original URI could be read two ways (${reason}): it is refused, since the upstream might read it otherwise than this check.`,
  );
}
