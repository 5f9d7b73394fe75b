import { TesseraError } from '../errors.js';

/** An admin-only resource for forward authentication: a path prefix under the app, for one method or all. */
export interface AdminPathRule {
  method: string | undefined;
  /** Normalized segments after `/api/apps/{appId}`; empty: the whole app. */
  segments: string[];
}

/** What forward authentication checks: the app, and where the original request goes within it. */
export interface ForwardedTarget {
  appId: string;
  /** Normalized segments after `/api/apps/{appId}`. */
  segments: string[];
  /** The normalized path, for the `/me` rule. */
  path: string;
}

const RULE_PATTERN = /^(?:([A-Za-z]+)\s+)?(\/\S*)$/;

/**
 * Parses `FORWARD_AUTH_ADMIN_PATHS` entries: `/prefix` (any method) or `METHOD /prefix`, the prefix
 * relative to `/api/apps/{appId}` and matched on whole segments (`/events` covers `/events` and
 * `/events/1`, not `/eventsx`). Throws an Error naming a bad entry.
 */
export function parseAdminPathRules(entries: readonly string[]): AdminPathRule[] {
  return entries.map((entry) => {
    const match = RULE_PATTERN.exec(entry.trim());
    const segments = match === null ? undefined : normalizeSegments(match[2]!);
    if (match === null || segments === undefined) {
      throw new Error(`"${entry}" is not a path prefix like "/admin" or "DELETE /objects"`);
    }
    return { method: match[1]?.toUpperCase(), segments };
  });
}

export function isAdminPath(rules: readonly AdminPathRule[], method: string, segments: readonly string[]): boolean {
  return rules.some(
    (rule) =>
      (rule.method === undefined || rule.method === method.toUpperCase()) &&
      rule.segments.length <= segments.length &&
      rule.segments.every((segment, index) => segments[index] === segment),
  );
}

/**
 * The app and path that an original request URI (`/api/apps/{appId}/...?query`) addresses, after
 * the normalization an upstream server would apply: percent-decoding, `.` and `..` segments and
 * empty segments resolved. Matching the raw URI instead would let `/%61dmin` past an `/admin` rule.
 */
export function resolveForwardedTarget(uri: string): ForwardedTarget {
  const end = uri.search(/[?#]/);
  const segments = normalizeSegments(end < 0 ? uri : uri.slice(0, end));
  if (segments === undefined) throw new TesseraError('invalid_request', 'The original URI is not a valid path.');
  if (segments.length < 3 || segments[0] !== 'api' || segments[1] !== 'apps') {
    throw new TesseraError('invalid_request', 'The original URI is not under /api/apps/{appId}/.');
  }
  // Re-encoded, so that a decoded '?' or '%' in a segment is not read as syntax by the /me rule.
  return { appId: segments[2]!, segments: segments.slice(3), path: `/${segments.map(encodeURIComponent).join('/')}` };
}

/** Decoded, resolved segments of an absolute path; undefined if it is not one. */
function normalizeSegments(path: string): string[] | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    let segment: string;
    try {
      segment = raw.includes('%') ? decodeURIComponent(raw) : raw;
    } catch {
      return undefined;
    }
    if (segment.includes('/')) return undefined; // an encoded slash would change the path's shape
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  return segments;
}
