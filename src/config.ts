import { parseAdminPathRules, type AdminPathRule } from './auth/forward.js';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { DEFAULT_APPS_PER_DEVELOPER } from './developers/developer-limits.js';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './http/timeouts.js';
import { DEFAULT_HOUSEKEEPING, type HousekeepingSettings } from './housekeeping.js';
import { DEFAULT_RATE_LIMITS, type RateLimitSettings } from './limits/rate-limits.js';
import { parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';
import { KEY_ENCRYPTION_KEY_BYTES } from './jwt/key-encryption.js';
import { DEFAULT_STATUS_LIST_TTL_SECONDS } from './jwt/status-lists.js';
import type { DestinationPolicy } from './webhooks/destination.js';
import { DEFAULT_CACHE_MEMORY_MB } from 'tessera-tokens/internal/cache/budget.js';
import { DEFAULT_STALE_LIMIT_MS } from './store/store.js';
import { parsePostgresUrl } from 'tessera-tokens/internal/store/postgres/multi-host-url.js';
import { DEFAULT_MAX_REVOKED_PER_APP } from './tokens/revocation.js';
import { DEFAULT_FINALIZE_AFTER_MS } from './upgrade/registry.js';
import { parseSmtpUrl, type SmtpServer } from './mail/smtp.js';

/** Everything the service reads from its environment; see the README's configuration table. */
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  logLevel: string;
  /** `LOG_FORMAT`: `auto` writes readable lines on a terminal and JSON lines otherwise. */
  logFormat: LogFormat;
  logRequests: boolean;
  rateLimits: RateLimitSettings;
  /** Create and print a demo app when the embedded store is empty. */
  demoApp: boolean;
  /** The developer portal at `/portal/` (PORTAL=on|off). */
  portal: boolean;
  /**
   * Who may make a portal account (`PORTAL_SIGNUP`): `invite`, only the operator (`tessera developers
   * create`), or `open`, anyone who reaches the portal, through its sign-up page.
   */
  portalSignup: PortalSignup;
  /**
   * How many apps one developer may own, created in the portal (`PORTAL_APPS_PER_DEVELOPER`); 0: the
   * portal creates none. The operator's `tessera apps create --owner` is not held by it.
   */
  portalAppsPerDeveloper: number;
  /** `directUrl`: DATABASE_DIRECT_URL, set when DATABASE_URL goes through a transaction pooler. */
  postgres: {
    poolSize: number;
    connectTimeoutMs: number;
    queryTimeoutMs: number;
    staleLimitMs: number;
    startupRetryMs: number;
    directUrl?: string;
  };
  housekeeping: HousekeepingSettings;
  /**
   * How long `tessera serve`, once its HTTP requests are drained after SIGTERM or SIGINT, waits for
   * its store to close (the last audit events and counts written, the instance's registration
   * removed, the connections ended) before it gives up, says what it leaves undone and exits 1
   * (`SHUTDOWN_STORE_TIMEOUT_MS`).
   */
  shutdownStoreTimeoutMs: number;
  /** Paths under `/api/apps/{appId}` that forward authentication admits for admin tokens only. */
  forwardAuthAdminPaths: AdminPathRule[];
  /** Addresses (IPs, CIDR ranges, or loopback/linklocal/uniquelocal) whose X-Forwarded-For is believed. */
  trustedProxies: string[];
  http: HttpTimeouts;
  /** Anonymous tokens of one app that callers other than its admin may keep revoked one by one. */
  revokedTokensMaxPerApp: number;
  /** What the caches of apps and tokens may take in all, in MiB (`CACHE_MEMORY_MB`; `src/cache/budget.ts`). */
  cacheMemoryMb: number;
  /**
   * How long no instance of an older release must have been seen on the store before an instance
   * finalizes it for its own release by itself (`UPGRADE_FINALIZE_AFTER_SECONDS`; `src/upgrade/`).
   */
  upgradeFinalizeAfterMs: number;
  /**
   * Where clients reach the service (`PUBLIC_URL`), without a trailing slash: the base of OAuth
   * metadata and of the links the service hands out (the portal's one-time links).
   */
  publicUrl: string | undefined;
  /**
   * The key the private JWT keys are encrypted with (`KEY_ENCRYPTION_KEY`, 32 bytes in base64 or
   * base64url); undefined when not set (`resolveKeyEncryptionKey` then keeps one beside an SQLite file).
   */
  keyEncryptionKey: Buffer | undefined;
  /**
   * The key encryption key being replaced (`KEY_ENCRYPTION_KEY_PREVIOUS`): private keys it encrypted
   * still decrypt, while the keys made under the new one take over (docs/security.md).
   */
  previousKeyEncryptionKey: Buffer | undefined;
  /** How long a verifier may keep a status list (`STATUS_LIST_TTL_SECONDS`). */
  statusListTtlSeconds: number;
  /** Where webhooks may be sent (`WEBHOOK_ALLOW_HTTP`, `WEBHOOK_ALLOW_PRIVATE`): `https` to public addresses by default. */
  webhookDestinations: DestinationPolicy;
  /** How long a webhook delivery's attempt may take (`WEBHOOK_TIMEOUT_SECONDS`, 10 by default). */
  webhookTimeoutMs: number;
  /**
   * The Prometheus metrics' own listener (`METRICS_PORT`, `METRICS_HOST`, loopback by default), or
   * undefined: then no metrics at all, and nothing counted.
   */
  metrics: MetricsListenerConfig | undefined;
  /** Mail through the operator's SMTP server (`SMTP_URL`, `MAIL_FROM`); undefined: no mail, links are printed or shown. */
  mail: MailConfig | undefined;
}

export interface MailConfig {
  smtp: SmtpServer;
  /** The `From` of every mail (`MAIL_FROM`); by default `Tessera <tessera@HOST>`, HOST that of PUBLIC_URL. */
  from: string;
}

/**
 * SHUTDOWN_STORE_TIMEOUT_MS's default: room for a statement that hangs to time out
 * (PG_QUERY_TIMEOUT_MS, 5 s) and for the audit events to be tried again after it, within the 30 s
 * that Kubernetes gives a pod to stop, after the HTTP drain.
 */
export const DEFAULT_SHUTDOWN_STORE_TIMEOUT_MS = 10_000;

export interface MetricsListenerConfig {
  host: string;
  /** 0: a port the kernel picks (logged). */
  port: number;
}

export type PortalSignup = 'open' | 'invite';

export type LogFormat = 'auto' | 'json' | 'pretty';

export class ConfigError extends Error {}

/**
 * The settings that hold a secret (a password in a URL). Each may be read instead from the file its
 * `_FILE` twin names (`DATABASE_URL_FILE=/run/secrets/database-url`), as container images do: the
 * secret then stays out of the environment, which `docker inspect` and `/proc/PID/environ` show.
 */
export const SECRET_SETTINGS = [
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'REDIS_URL',
  'KEY_ENCRYPTION_KEY',
  'KEY_ENCRYPTION_KEY_PREVIOUS',
  'SMTP_URL',
] as const;

/** The largest secret file read: a URL is far shorter, so a larger file is not the one meant. */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const { values, files } = withSecretFiles(env);
  let config: Config;
  try {
    config = readConfig(values);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // The operator looks for the value in the environment: say where it came from instead.
    const sources = [...files]
      .filter(([name]) => new RegExp(`\\b${name}\\b`).test(error.message))
      .map(([name, path]) => `${name} was read from ${path} (${name}_FILE).`);
    throw sources.length === 0 ? error : new ConfigError([error.message, ...sources].join(' '));
  }
  if (config.http.headersTimeoutMs > config.http.requestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS must not be longer than HTTP_REQUEST_TIMEOUT_MS.');
  }
  return config;
}

/**
 * `env` with each secret setting whose `X_FILE` is set read from that file, and the files read (by
 * setting). Setting both `X` and `X_FILE` is an error: which one wins would be a guess.
 */
export function withSecretFiles(env: NodeJS.ProcessEnv): { values: NodeJS.ProcessEnv; files: Map<string, string> } {
  const values: NodeJS.ProcessEnv = { ...env };
  const files = new Map<string, string>();
  for (const name of SECRET_SETTINGS) {
    const path = env[`${name}_FILE`]?.trim() ?? '';
    if (path === '') continue;
    if ((env[name]?.trim() ?? '') !== '') throw new ConfigError(`${name} and ${name}_FILE are both set: set only one of them.`);
    values[name] = secretFromFile(`${name}_FILE`, path);
    files.set(name, path);
  }
  return { values, files };
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The file's text without one trailing newline; no error repeats what the file holds. */
function secretFromFile(setting: string, path: string): string {
  const bytes = readAtMost(setting, path, MAX_SECRET_FILE_BYTES);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new ConfigError(`${setting}: ${path} is not UTF-8 text.`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value.trim() === '') throw new ConfigError(`${setting}: ${path} is empty; it must hold the value itself.`);
  if (/[\r\n]/.test(value)) throw new ConfigError(`${setting}: ${path} holds several lines; it must hold the value alone, on one line.`);
  return value;
}

/** The file's bytes, read up to one past `limit` so that a larger one (or an endless device) is refused. */
function readAtMost(setting: string, path: string, limit: number): Uint8Array {
  let fd: number | undefined;
  try {
    if (statSync(path).isDirectory()) throw new ConfigError(`${setting}: ${path} is a directory, not a file.`);
    fd = openSync(path, 'r');
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    while (length < buffer.length) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    if (length > limit) throw new ConfigError(`${setting}: ${path} is larger than ${limit / 1024} KiB; it must hold the value alone.`);
    return buffer.subarray(0, length);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? (error as Error).message);
    throw new ConfigError(`${setting}: cannot read ${path} (${reason}).`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function readConfig(env: NodeJS.ProcessEnv): Config {
  return {
    host: env.HOST?.trim() || '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: databaseUrl(env),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    logFormat: oneOf(env, 'LOG_FORMAT', 'auto', ['auto', 'json', 'pretty']) as LogFormat,
    logRequests: onOff(env, 'LOG_REQUESTS', false),
    rateLimits: {
      enabled: onOff(env, 'RATE_LIMITS', true),
      tokenRequestsPerAddressPerMinute: integer(
        env,
        'RATE_LIMIT_TOKEN_PER_ADDRESS',
        DEFAULT_RATE_LIMITS.tokenRequestsPerAddressPerMinute,
        1,
        1e9,
      ),
      adminFailuresPerAddressPerMinute: integer(
        env,
        'RATE_LIMIT_ADMIN_FAILURES_PER_ADDRESS',
        DEFAULT_RATE_LIMITS.adminFailuresPerAddressPerMinute,
        1,
        1e9,
      ),
      adminFailuresPerAppPerMinute: integer(
        env,
        'RATE_LIMIT_ADMIN_FAILURES_PER_APP',
        DEFAULT_RATE_LIMITS.adminFailuresPerAppPerMinute,
        1,
        1e9,
      ),
      redisUrl: redisUrl(env),
      redisKeyPrefix: env.REDIS_KEY_PREFIX?.trim() || 'tessera',
    },
    cacheMemoryMb: integer(env, 'CACHE_MEMORY_MB', DEFAULT_CACHE_MEMORY_MB, 1, 1_048_576),
    upgradeFinalizeAfterMs: 1000 * integer(env, 'UPGRADE_FINALIZE_AFTER_SECONDS', DEFAULT_FINALIZE_AFTER_MS / 1000, 1, 30 * 86_400),
    demoApp: onOff(env, 'DEMO_APP', true),
    portal: onOff(env, 'PORTAL', true),
    portalSignup: oneOf(env, 'PORTAL_SIGNUP', 'invite', ['open', 'invite']) as PortalSignup,
    portalAppsPerDeveloper: integer(env, 'PORTAL_APPS_PER_DEVELOPER', DEFAULT_APPS_PER_DEVELOPER, 0, 1_000_000),
    postgres: {
      poolSize: integer(env, 'PG_POOL_SIZE', 10, 1, 1000),
      connectTimeoutMs: integer(env, 'PG_CONNECT_TIMEOUT_MS', 2_000, 100, 600_000),
      queryTimeoutMs: integer(env, 'PG_QUERY_TIMEOUT_MS', 5_000, 100, 600_000),
      staleLimitMs: integer(env, 'PG_STALE_LIMIT_MS', DEFAULT_STALE_LIMIT_MS, 250, 3_600_000),
      startupRetryMs: integer(env, 'PG_STARTUP_TIMEOUT_MS', 30_000, 0, 3_600_000),
      ...databaseDirectUrl(env),
    },
    housekeeping: {
      intervalMs: integer(env, 'HOUSEKEEPING_INTERVAL_SECONDS', DEFAULT_HOUSEKEEPING.intervalMs / 1000, 1, 86_400) * 1000,
      eventRetentionMs: integer(env, 'EVENTS_RETENTION_DAYS', DEFAULT_HOUSEKEEPING.eventRetentionMs / 86_400_000, 1, 36_500) * 86_400_000,
      maxEventsPerApp: integer(env, 'EVENTS_MAX_PER_APP', DEFAULT_HOUSEKEEPING.maxEventsPerApp, 10, 100_000_000),
      maxRefusalsPerApp: integer(env, 'EVENTS_MAX_REFUSALS_PER_APP', DEFAULT_HOUSEKEEPING.maxRefusalsPerApp, 10, 100_000_000),
      jwtKeyRotationMs: integer(env, 'JWT_KEY_ROTATION_DAYS', 0, 0, 3650) * 86_400_000,
    },
    shutdownStoreTimeoutMs: integer(env, 'SHUTDOWN_STORE_TIMEOUT_MS', DEFAULT_SHUTDOWN_STORE_TIMEOUT_MS, 100, 600_000),
    forwardAuthAdminPaths: adminPathRules(env),
    trustedProxies: trustedProxies(env),
    http: {
      headersTimeoutMs: integer(env, 'HTTP_HEADERS_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.headersTimeoutMs, 100, 600_000),
      requestTimeoutMs: integer(env, 'HTTP_REQUEST_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.requestTimeoutMs, 100, 600_000),
      keepAliveTimeoutMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.keepAliveTimeoutMs, 100, 600_000),
    },
    revokedTokensMaxPerApp: integer(env, 'REVOKED_TOKENS_MAX_PER_APP', DEFAULT_MAX_REVOKED_PER_APP, 0, 100_000_000),
    publicUrl: publicUrl(env),
    keyEncryptionKey: keyEncryptionKey(env),
    previousKeyEncryptionKey: keyEncryptionKey(env, 'KEY_ENCRYPTION_KEY_PREVIOUS'),
    statusListTtlSeconds: integer(env, 'STATUS_LIST_TTL_SECONDS', DEFAULT_STATUS_LIST_TTL_SECONDS, 1, 86_400),
    webhookDestinations: { allowHttp: onOff(env, 'WEBHOOK_ALLOW_HTTP', false), allowPrivate: onOff(env, 'WEBHOOK_ALLOW_PRIVATE', false) },
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 30) * 1000,
    metrics: metricsListener(env),
    mail: mailConfig(env),
  };
}

/** SMTP_URL and MAIL_FROM; mail needs PUBLIC_URL, the base of every link it holds. No error repeats the URL, which may hold a password. */
function mailConfig(env: NodeJS.ProcessEnv): MailConfig | undefined {
  const raw = env.SMTP_URL?.trim() ?? '';
  if (raw === '') {
    if ((env.MAIL_FROM?.trim() ?? '') !== '') throw new ConfigError('MAIL_FROM is set but SMTP_URL is not: set SMTP_URL too, or neither.');
    return undefined;
  }
  let smtp: SmtpServer;
  try {
    smtp = parseSmtpUrl(raw);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const base = publicUrl(env);
  if (base === undefined) {
    throw new ConfigError('SMTP_URL needs PUBLIC_URL: every link a mail holds (a password link, an invitation, an alert) is whole.');
  }
  const from = env.MAIL_FROM?.trim() || `Tessera <tessera@${new URL(base).hostname}>`;
  if (/[\r\n]/.test(from) || !/@[^@\s>]+>?$/.test(from)) {
    throw new ConfigError('MAIL_FROM must be an address, alone (tessera@example.com) or with a name (Tessera <tessera@example.com>).');
  }
  return { smtp, from };
}

function keyEncryptionKey(env: NodeJS.ProcessEnv, name = 'KEY_ENCRYPTION_KEY'): Buffer | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const key = /^[A-Za-z0-9+/=_-]+$/.test(raw)
    ? Buffer.from(raw, raw.includes('+') || raw.includes('/') ? 'base64' : 'base64url')
    : undefined;
  if (key?.length !== KEY_ENCRYPTION_KEY_BYTES) {
    throw new ConfigError(
      `${name} must be ${KEY_ENCRYPTION_KEY_BYTES} random bytes in base64 or base64url (e.g. openssl rand -base64 32).`,
    );
  }
  return key;
}

function metricsListener(env: NodeJS.ProcessEnv): MetricsListenerConfig | undefined {
  const host = env.METRICS_HOST?.trim() || '127.0.0.1';
  if (/[\s/]/.test(host)) throw new ConfigError(`METRICS_HOST must be an address or a host name; got "${env.METRICS_HOST}".`);
  if ((env.METRICS_PORT?.trim() ?? '') === '') return undefined;
  return { host, port: integer(env, 'METRICS_PORT', 0, 0, 65535) };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}; got "${raw}".`);
  }
  return value;
}

function list(env: NodeJS.ProcessEnv, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Checked here with the rest, so that a wrong one is a configuration error; `openStore` reads it. */
function databaseUrl(env: NodeJS.ProcessEnv): string | undefined {
  try {
    parseDatabaseUrl(env.DATABASE_URL);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return env.DATABASE_URL;
}

/** `DATABASE_DIRECT_URL`: PostgreSQL itself, beside a DATABASE_URL that goes through a transaction pooler. */
function databaseDirectUrl(env: NodeJS.ProcessEnv): { directUrl?: string } {
  const value = env.DATABASE_DIRECT_URL?.trim() ?? '';
  if (value === '') return {};
  if (!/^postgres(ql)?:\/\//i.test(value)) throw new ConfigError('DATABASE_DIRECT_URL must be a postgres://… URL.');
  try {
    parsePostgresUrl(value, 'DATABASE_DIRECT_URL');
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (parseDatabaseUrl(env.DATABASE_URL).backend !== 'postgres') {
    throw new ConfigError('DATABASE_DIRECT_URL is for PostgreSQL: DATABASE_URL must then be a postgres://… URL too.');
  }
  return { directUrl: value };
}

/**
 * An absolute http(s) URL, maybe with a path (a proxy that serves the service under a prefix), without
 * credentials, query or fragment; its value is not repeated in the error, in case it holds a password.
 */
function publicUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.PUBLIC_URL?.trim();
  if (raw === undefined || raw === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    !['http:', 'https:'].includes(url.protocol) ||
    url.username !== '' ||
    url.password !== '' ||
    url.search !== '' ||
    url.hash !== '' ||
    raw.includes('?') ||
    raw.includes('#')
  ) {
    throw new ConfigError(
      'PUBLIC_URL must be the absolute http:// or https:// URL where clients reach the service, such as ' +
        'https://tokens.example.com, without credentials, query or fragment.',
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function redisUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.REDIS_URL?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (!/^rediss?:\/\//i.test(raw)) throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL.');
  return raw;
}

const PROXY_KEYWORDS = ['loopback', 'linklocal', 'uniquelocal'];

function trustedProxies(env: NodeJS.ProcessEnv): string[] {
  const entries = list(env, 'TRUSTED_PROXIES');
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const version = isIP(address ?? '');
    const bitsValid = bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= (version === 6 ? 128 : 32));
    if (!PROXY_KEYWORDS.includes(entry) && (version === 0 || !bitsValid || extra !== undefined)) {
      throw new ConfigError(`TRUSTED_PROXIES: "${entry}" is not an IP address, a CIDR range, or one of ${PROXY_KEYWORDS.join(', ')}.`);
    }
  }
  return entries;
}

function adminPathRules(env: NodeJS.ProcessEnv): AdminPathRule[] {
  try {
    return parseAdminPathRules(list(env, 'FORWARD_AUTH_ADMIN_PATHS'));
  } catch (error) {
    throw new ConfigError(`FORWARD_AUTH_ADMIN_PATHS: ${(error as Error).message}, separated by commas.`);
  }
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['on', 'true', '1', 'yes'].includes(raw)) return true;
  if (['off', 'false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(`${name} must be "on" or "off"; got "${env[name]}".`);
}

function oneOf(env: NodeJS.ProcessEnv, name: string, fallback: string, allowed: string[]): string {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (!allowed.includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}; got "${env[name]}".`);
  return raw;
}
