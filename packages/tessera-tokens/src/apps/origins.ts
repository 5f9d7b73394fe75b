import { TesseraError } from '../errors.js';
import { quoted } from '../text.js';

/**
 * The web origins whose pages may call the service for an app (CORS): `allowedOrigins` of its
 * configuration. Each is an exact origin, `scheme://host[:port]` (http or https), or one subdomain
 * wildcard, `https://*.example.com[:port]`, which matches every subdomain of that domain at any
 * depth (not the domain itself) with the same scheme and port. docs/decisions.md ("Browser apps").
 */

/** How many origins an app may list. */
export const MAX_ALLOWED_ORIGINS = 100;
/** The longest origin that can be listed: a 253-character host, a scheme and a port fit. */
export const MAX_ORIGIN_LENGTH = 300;

/** Scheme, an optional `*.`, then host and port: no userinfo, path, query or fragment (one trailing `/` is forgiven). */
const ORIGIN_TEXT = /^(https?):\/\/(\*\.)?([^/?#@\\\s*]+)\/?$/i;
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
/** A host name or an IPv4 address, as the URL parser leaves it (lower case, IDN as punycode). */
const HOST_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);
/** What the wildcard stands for in an origin that a browser sends: one or more labels. */
const SUBDOMAIN = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/**
 * The origin in its canonical form (the one browsers send in `Origin`: lower case, the default port
 * left out, an international name in punycode), or undefined when `text` is not one that can be
 * listed.
 */
export function canonicalOrigin(text: string): string | undefined {
  if (text.length > MAX_ORIGIN_LENGTH) return undefined;
  const parts = ORIGIN_TEXT.exec(text);
  if (parts === null) return undefined;
  const [, scheme, wildcard, hostAndPort] = parts as unknown as [string, string, string | undefined, string];
  let url: URL;
  try {
    url = new URL(`${scheme.toLowerCase()}://${hostAndPort}`);
  } catch {
    return undefined;
  }
  const ipv6 = url.hostname.startsWith('[');
  if (!ipv6 && !HOST_NAME.test(url.hostname)) return undefined;
  if (url.port === '0') return undefined;
  if (wildcard !== undefined) {
    // A wildcard names a domain: at least two labels, not an address.
    const labels = url.hostname.split('.');
    if (ipv6 || labels.length < 2 || /^[0-9]+$/.test(labels.at(-1)!)) return undefined;
    return `${url.protocol}//*.${url.host}`;
  }
  return `${url.protocol}//${url.host}`;
}

/**
 * `allowedOrigins` of a configuration change: a list of at most `MAX_ALLOWED_ORIGINS` origins, each
 * made canonical, duplicates dropped; `null` empties it. `invalid_request` names the first bad entry,
 * as `entryName` says (the API's `allowedOrigins[0]`, the portal's "Line 1").
 */
export function parseAllowedOrigins(value: unknown, name: string, entryName = (index: number) => `${name}[${index}]`): string[] {
  if (value === null) return [];
  if (!Array.isArray(value)) throw invalid(`${name} must be a list of origins, such as ["https://app.example.com"].`);
  if (value.length > MAX_ALLOWED_ORIGINS) throw invalid(`${name} may list at most ${MAX_ALLOWED_ORIGINS} origins.`);
  const origins = new Set<string>();
  value.forEach((entry: unknown, index) => {
    const origin = typeof entry === 'string' ? canonicalOrigin(entry) : undefined;
    if (origin === undefined) {
      const shown = typeof entry === 'string' ? quoted(entry) : `a ${entry === null ? 'null' : typeof entry}`;
      throw invalid(
        `${entryName(index)} (${shown}) is not an origin: write scheme://host or scheme://host:port, with http or https and ` +
          `nothing after it (no path, query or fragment), or https://*.example.com for every subdomain; at most ${MAX_ORIGIN_LENGTH} characters.`,
      );
    }
    origins.add(origin);
  });
  return [...origins];
}

/** Whether a request's `Origin` is one of `allowed` (canonical entries), exactly or under a wildcard. */
export function isOriginAllowed(allowed: readonly string[], origin: string): boolean {
  for (const entry of allowed) {
    if (entry === origin) return true;
    const star = entry.indexOf('*');
    if (star >= 0 && matchesWildcard(entry, star, origin)) return true;
  }
  return false;
}

/** `https://*.example.com` against `https://a.b.example.com`: same scheme, same suffix (port included), labels for the star. */
function matchesWildcard(entry: string, star: number, origin: string): boolean {
  const scheme = entry.slice(0, star);
  const suffix = entry.slice(star + 1);
  if (origin.length <= scheme.length + suffix.length || !origin.startsWith(scheme) || !origin.endsWith(suffix)) return false;
  return SUBDOMAIN.test(origin.slice(scheme.length, origin.length - suffix.length));
}

function invalid(message: string): TesseraError {
  return new TesseraError('invalid_request', message);
}
