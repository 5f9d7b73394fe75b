import { parseAdminPathRules, type AdminPathRule } from './auth/forward.js';
import { DEFAULT_HOUSEKEEPING, type HousekeepingSettings } from './housekeeping.js';
import { DEFAULT_RATE_LIMITS, type RateLimitSettings } from './limits/rate-limits.js';

/** Everything the service reads from its environment; see the README's configuration table. */
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  logLevel: string;
  logRequests: boolean;
  rateLimits: RateLimitSettings;
  /** Create and print a demo app when the embedded store is empty. */
  demoApp: boolean;
  postgres: { poolSize: number; connectTimeoutMs: number; queryTimeoutMs: number };
  housekeeping: HousekeepingSettings;
  /** Paths under `/api/apps/{appId}` that forward authentication admits for admin tokens only. */
  forwardAuthAdminPaths: AdminPathRule[];
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST?.trim() || '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: env.DATABASE_URL,
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
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
      adminFailuresPerAppPerMinute: integer(
        env,
        'RATE_LIMIT_ADMIN_FAILURES_PER_APP',
        DEFAULT_RATE_LIMITS.adminFailuresPerAppPerMinute,
        1,
        1e9,
      ),
    },
    demoApp: onOff(env, 'DEMO_APP', true),
    postgres: {
      poolSize: integer(env, 'PG_POOL_SIZE', 10, 1, 1000),
      connectTimeoutMs: integer(env, 'PG_CONNECT_TIMEOUT_MS', 2_000, 100, 600_000),
      queryTimeoutMs: integer(env, 'PG_QUERY_TIMEOUT_MS', 5_000, 100, 600_000),
    },
    housekeeping: {
      intervalMs: integer(env, 'HOUSEKEEPING_INTERVAL_SECONDS', DEFAULT_HOUSEKEEPING.intervalMs / 1000, 1, 86_400) * 1000,
      eventRetentionMs: integer(env, 'EVENTS_RETENTION_DAYS', DEFAULT_HOUSEKEEPING.eventRetentionMs / 86_400_000, 1, 36_500) * 86_400_000,
      maxEventsPerApp: integer(env, 'EVENTS_MAX_PER_APP', DEFAULT_HOUSEKEEPING.maxEventsPerApp, 10, 100_000_000),
    },
    forwardAuthAdminPaths: adminPathRules(env),
  };
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
