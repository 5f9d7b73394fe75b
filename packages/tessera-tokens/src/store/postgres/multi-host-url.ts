import { isIPv6 } from 'node:net';
import { quoted } from '../../text.js';

/**
 * A `postgres://` URL as libpq reads it, for what `pg` does not read: several hosts
 * (`postgres://user@h1:5432,h2:5433,[::1]:5434/db`), `target_session_attrs` and `connect_timeout`.
 * Everything else (credentials, database, `sslmode` and the other parameters) is left to `pg`: the
 * URL it is given names one host, and connection.ts points each connection at the host it chose.
 *
 * Nothing here connects anywhere. A URL that cannot be read throws an Error whose message names the
 * setting and what is wrong, never the URL itself, which may hold a password.
 */

/**
 * Which servers a connection may stay on. `read-write`: one that accepts writes (not a standby, not
 * `default_transaction_read_only`); `primary`: one that is not a standby; `any`: the first that
 * answers. libpq's `read-only`, `standby` and `prefer-standby` are refused: Tessera writes (every
 * token issued), and a standby can neither take writes nor `LISTEN` (docs/decisions.md).
 */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';

export interface PostgresHost {
  /** undefined: the one host of a URL with a single host, as `pg` reads it (a socket directory, `?host=`…). */
  host: string | undefined;
  port: number | undefined;
  /** `host:port`, for messages. */
  label: string;
}

export interface PostgresUrl {
  /** In the URL's order; one entry for a URL with a single host. */
  hosts: PostgresHost[];
  targetSessionAttrs: TargetSessionAttrs;
  /** `connect_timeout` in ms: how long one host may take to accept a connection; undefined when not given (or 0). */
  connectTimeoutMs: number | undefined;
  /**
   * The URL for `pg`: its first host only, without `target_session_attrs` and `connect_timeout`.
   * For a URL with a single host and neither parameter, the URL exactly as given.
   */
  url: string;
  /** Whether anything here asks for more than `pg` does by itself (several hosts, or either parameter). */
  multiHost: boolean;
}

const DEFAULT_PORT = 5432;
const SCHEME_AND_AUTHORITY = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/is;
const REFUSED_ATTRS: Record<string, string> = {
  'read-only': 'a read-only session',
  standby: 'a standby',
  'prefer-standby': 'a standby when there is one',
};

/** Reads `url` (DATABASE_URL, or the setting `setting` names) as libpq would. */
export function parsePostgresUrl(url: string, setting = 'DATABASE_URL'): PostgresUrl {
  const match = SCHEME_AND_AUTHORITY.exec(url.trim());
  if (match === null) throw new Error(`${setting} must be a postgres://… URL.`);
  const [, scheme, authority, rest] = match as unknown as [string, string, string, string];
  // The credentials end at the authority's last '@' (as in WHATWG URLs, which pg reads them with).
  const at = authority.lastIndexOf('@');
  const userinfo = authority.slice(0, at + 1);
  const hostList = authority.slice(at + 1);

  const queryAt = rest.indexOf('?');
  const path = queryAt < 0 ? rest : rest.slice(0, queryAt);
  const query = queryAt < 0 ? '' : rest.slice(queryAt + 1).replace(/#.*$/s, '');
  const pairs = query === '' ? [] : query.split('&');
  const valueOf = (name: string): string | undefined => {
    let found: string | undefined;
    for (const pair of pairs) {
      const equals = pair.indexOf('=');
      const key = decode(equals < 0 ? pair : pair.slice(0, equals), setting);
      if (key === name) found = decode(equals < 0 ? '' : pair.slice(equals + 1).replace(/\+/g, ' '), setting);
    }
    return found;
  };

  const several = hostList.includes(',');
  for (const name of ['host', 'hostaddr', 'port']) {
    const value = valueOf(name);
    if (value?.includes(',') === true) {
      throw new Error(
        `${setting}: write several hosts in the URL itself (postgres://user@host1:5432,host2:5432/database), not as ?${name}=.`,
      );
    }
    if (value !== undefined && several) {
      throw new Error(`${setting} names several hosts: it may not also set ?${name}=.`);
    }
  }

  const targetSessionAttrs = readTargetSessionAttrs(valueOf('target_session_attrs'), several, setting);
  const connectTimeoutMs = readConnectTimeout(valueOf('connect_timeout'), setting);
  const ownParameters = valueOf('target_session_attrs') !== undefined || valueOf('connect_timeout') !== undefined;

  if (!several) {
    const single = { host: undefined, port: undefined, label: singleHostLabel(hostList) };
    const forPg = ownParameters ? `${scheme}${authority}${path}${withoutOwnParameters(pairs, setting)}` : url.trim();
    return { hosts: [single], targetSessionAttrs, connectTimeoutMs, url: forPg, multiHost: ownParameters };
  }
  const hosts = hostList.split(',').map((item) => readHost(item, setting));
  const firstHost = hostList.slice(0, hostList.indexOf(','));
  return {
    hosts,
    targetSessionAttrs,
    connectTimeoutMs,
    url: `${scheme}${userinfo}${firstHost}${path}${withoutOwnParameters(pairs, setting)}`,
    multiHost: true,
  };
}

function readHost(item: string, setting: string): PostgresHost {
  if (item === '') throw new Error(`${setting} names an empty host in its list of hosts.`);
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/s.exec(item);
  let host: string;
  let port: string | undefined;
  if (bracketed !== null) {
    host = bracketed[1]!;
    port = bracketed[2];
    if (!isIPv6(host)) throw new Error(`${setting}: ${quoted(item)} is not an IPv6 address in brackets.`);
  } else {
    const colon = item.indexOf(':');
    host = decode(colon < 0 ? item : item.slice(0, colon), setting);
    port = colon < 0 ? undefined : item.slice(colon + 1);
    if (host === '') throw new Error(`${setting}: ${quoted(item)} has no host name.`);
    if (!/^(?:[A-Za-z0-9._~-]+|\/[^\s]*)$/.test(host)) {
      throw new Error(`${setting}: ${quoted(item)} is not a host name, an IP address or a socket directory (%2F…).`);
    }
  }
  const portNumber = port === undefined || port === '' ? DEFAULT_PORT : Number(port);
  if (!/^[0-9]*$/.test(port ?? '') || portNumber < 1 || portNumber > 65535) {
    throw new Error(`${setting}: the port of ${quoted(item)} must be a number from 1 to 65535.`);
  }
  return { host, port: portNumber, label: host.includes(':') ? `[${host}]:${portNumber}` : `${host}:${portNumber}` };
}

function readTargetSessionAttrs(value: string | undefined, several: boolean, setting: string): TargetSessionAttrs {
  // libpq's default is any. Tessera writes, so with several hosts it stays only on one that takes
  // writes unless told otherwise (docs/decisions.md, "Multi-host URLs").
  if (value === undefined) return several ? 'read-write' : 'any';
  if (value === 'any' || value === 'read-write' || value === 'primary') return value;
  const refused = REFUSED_ATTRS[value];
  if (refused !== undefined) {
    throw new Error(
      `${setting}: target_session_attrs=${value} would keep Tessera on ${refused}, where it can neither write (every token issued is written) ` +
        'nor LISTEN for changes. Use read-write (the default with several hosts), primary or any.',
    );
  }
  throw new Error(`${setting}: target_session_attrs must be read-write, primary or any; got ${quoted(value)}.`);
}

function readConnectTimeout(value: string | undefined, setting: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,6}$/.test(value.trim())) {
    throw new Error(`${setting}: connect_timeout must be a whole number of seconds (0 for none); got ${quoted(value)}.`);
  }
  const seconds = Number(value.trim());
  return seconds === 0 ? undefined : seconds * 1000;
}

function withoutOwnParameters(pairs: string[], setting: string): string {
  const kept = pairs.filter((pair) => {
    const equals = pair.indexOf('=');
    const key = decode(equals < 0 ? pair : pair.slice(0, equals), setting);
    return key !== 'target_session_attrs' && key !== 'connect_timeout';
  });
  return kept.length === 0 ? '' : `?${kept.join('&')}`;
}

/** `host:port` of a URL with a single host, for messages; pg reads the URL itself. */
function singleHostLabel(hostList: string): string {
  if (hostList === '') return 'the local socket';
  return /:[0-9]*$/.test(hostList) && !hostList.endsWith(']') ? hostList : `${hostList}:${DEFAULT_PORT}`;
}

function decode(text: string, setting: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new Error(`${setting} has a bad percent-escape.`);
  }
}
