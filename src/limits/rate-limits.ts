import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { TesseraError, type AdminLimit } from 'tessera-tokens/internal/errors.js';
import { NO_METRICS, type Metrics } from '../metrics/port.js';
import { addressKey } from './address-key.js';

export interface RateLimitSettings {
  enabled: boolean;
  /** Token requests one client address may make per minute. */
  tokenRequestsPerAddressPerMinute: number;
  /** Failed admin-token attempts on one app from one client address per minute, before that address's are refused. */
  adminFailuresPerAddressPerMinute: number;
  /** Failed admin-token attempts on one app from every address together per minute, before all are refused. */
  adminFailuresPerAppPerMinute: number;
  /** With a Redis URL (REDIS_URL), the counts are shared by every instance using it. */
  redisUrl?: string | undefined;
  /** Prefix of the Redis keys (REDIS_KEY_PREFIX), so that several deployments can share a Redis. */
  redisKeyPrefix?: string;
}

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  enabled: true,
  tokenRequestsPerAddressPerMinute: 1200,
  adminFailuresPerAddressPerMinute: 10,
  adminFailuresPerAppPerMinute: 1000,
};

/**
 * The throttles of the token endpoint. Every check resolves or throws `TOO_MANY_REQUESTS`. Client
 * addresses are counted by `addressKey` (an IPv6 address by its /64); null is an unknown address.
 */
export interface RateLimits {
  checkTokenRequest(address: string): Promise<void>;
  /**
   * For admin credentials found right: throws once the app's failures from this address, or the
   * app's failures from every address, have reached their limit.
   */
  checkAdminAttempt(appId: string, address: string | null): Promise<void>;
  /** Counts a failed admin attempt; throws if it is beyond a limit (its outcome must not be told). */
  recordAdminFailure(appId: string, address: string | null): Promise<void>;
  /**
   * Another counter kept where these are (in memory, or in Redis with the same in-memory insurance),
   * for limits of other endpoints (the portal's sign-in); undefined when limits are off.
   */
  counter(name: string, options: CounterOptions): RateLimiterAbstract | undefined;
  /** Resolves once shared counting works (Redis connected), or after `timeoutMs` if it does not. */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** How many points a counter allows per how many seconds. */
export interface CounterOptions {
  points: number;
  duration: number;
}

/** Failures on an app from an address: `APPID:ADDRESS-KEY` (an AppID holds no `:`); `APPID:-` for an unknown address. */
function adminAddressKey(appId: string, address: string | null): string {
  return `${appId}:${address === null ? '-' : addressKey(address)}`;
}

export const NO_RATE_LIMITS: RateLimits = {
  checkTokenRequest: async () => {},
  checkAdminAttempt: async () => {},
  recordAdminFailure: async () => {},
  counter: () => undefined,
  ready: async () => {},
  close: async () => {},
};

/**
 * Limits counted in memory (each instance on its own) or, with `redisUrl`, in Redis (shared by
 * every instance). While Redis cannot be reached, each instance counts in memory meanwhile: the
 * limits still hold per instance, and no request waits for Redis.
 */
/** ioredis, loaded only where Redis is configured: a CLI command or a server without it does not pay for its import. */
function loadRedis(): typeof Redis {
  return (createRequire(import.meta.url)('ioredis') as typeof IORedis).Redis;
}

export function createRateLimits(
  settings: RateLimitSettings,
  onWarning: (message: string, error: unknown) => void = () => {},
  metrics: Metrics = NO_METRICS,
): RateLimits {
  if (!settings.enabled) return NO_RATE_LIMITS;
  const perAddressOptions = { points: settings.tokenRequestsPerAddressPerMinute, duration: 60 };
  const adminFailuresByAddressOptions = { points: settings.adminFailuresPerAddressPerMinute, duration: 60 };
  const adminFailuresOptions = { points: settings.adminFailuresPerAppPerMinute, duration: 60 };
  let redis: Redis | undefined;
  if (settings.redisUrl !== undefined) {
    redis = new (loadRedis())(settings.redisUrl, {
      // Fail at once rather than queue while disconnected: the in-memory insurance answers instead.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      commandTimeout: 1_000,
    });
    let reported = false;
    redis.on('error', (error: unknown) => {
      if (!reported) onWarning('Redis cannot be reached; rate limits are counted per instance until it is back', error);
      reported = true;
    });
    redis.on('ready', () => (reported = false));
  }
  const prefix = settings.redisKeyPrefix ?? 'tessera';
  const counter = (name: string, options: CounterOptions): RateLimiterAbstract => {
    const memory = new RateLimiterMemory(options);
    if (redis === undefined) return memory;
    return new RateLimiterRedis({
      ...options,
      storeClient: redis,
      keyPrefix: `${prefix}:${name}`,
      rejectIfRedisNotReady: true,
      insuranceLimiter: memory,
    });
  };
  const adminRefusal = (rejection: RateLimiterRes, limit: AdminLimit): TesseraError => {
    metrics.rateLimited(limit === 'address' ? 'admin_failures_per_address' : 'admin_failures_per_app');
    return tooManyRequests(rejection, limit);
  };
  const perAddress = counter('token-requests', perAddressOptions);
  const adminFailuresByAddress = counter('admin-failures-by-address', adminFailuresByAddressOptions);
  const adminFailures = counter('admin-failures', adminFailuresOptions);
  return {
    async checkTokenRequest(address) {
      try {
        await perAddress.consume(addressKey(address));
      } catch (rejection) {
        const error = tooManyRequests(rejection);
        metrics.rateLimited('token_requests_per_address');
        throw error;
      }
    },
    // Both counts are asked at once, as the attempt is decided, neither after the other's answer:
    // attempts decided in a row are counted in that order on both, bursts included.
    async checkAdminAttempt(appId, address) {
      const [fromAddress, onApp] = await Promise.all([
        adminFailuresByAddress.get(adminAddressKey(appId, address)),
        adminFailures.get(appId),
      ]);
      if (fromAddress !== null && fromAddress.consumedPoints >= settings.adminFailuresPerAddressPerMinute)
        throw adminRefusal(fromAddress, 'address');
      if (onApp !== null && onApp.consumedPoints >= settings.adminFailuresPerAppPerMinute) throw adminRefusal(onApp, 'app');
    },
    async recordAdminFailure(appId, address) {
      const [fromAddress, onApp] = await Promise.all([
        adminFailuresByAddress.penalty(adminAddressKey(appId, address), 1),
        adminFailures.penalty(appId, 1),
      ]);
      if (fromAddress.consumedPoints > settings.adminFailuresPerAddressPerMinute) {
        // Failures past an address's own limit are given back to the app, or one address could use
        // up the app's ceiling and lock its admins out again. Meanwhile the app's count is a little
        // high, never low.
        await adminFailures.reward(appId, 1);
        throw adminRefusal(fromAddress, 'address');
      }
      if (onApp.consumedPoints > settings.adminFailuresPerAppPerMinute) throw adminRefusal(onApp, 'app');
    },
    counter,
    async ready(timeoutMs = 2_000) {
      const client = redis;
      if (client === undefined || client.status === 'ready') return;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          client.off('ready', done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        client.once('ready', done);
      });
    },
    async close() {
      redis?.disconnect();
    },
  };
}

/** Whole seconds until a refused limit takes requests again (`Retry-After`), at least 1. */
export function retryAfterSecondsOf(rejection: RateLimiterRes): number {
  return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
}

/** `adminLimit`: for the limits on failed admin attempts, which one refused. */
export function tooManyRequests(rejection: unknown, adminLimit?: AdminLimit): TesseraError {
  if (!(rejection instanceof RateLimiterRes)) throw rejection;
  const retryAfterSeconds = retryAfterSecondsOf(rejection);
  return new TesseraError(
    'TOO_MANY_REQUESTS',
    adminLimit === undefined ? 'Too many requests; try again later.' : adminLimitMessage(adminLimit, retryAfterSeconds),
    {
      retryAfterSeconds,
      ...(adminLimit === undefined ? {} : { adminLimit }),
    },
  );
}

/**
 * Why an admin attempt is refused, the right secret too: whoever holds the right secret is told
 * that wrong ones were sent, and from where they count, so that a client behind a shared address
 * (a NAT) knows that someone else's mistakes or guesses lock it out for a while.
 */
function adminLimitMessage(limit: AdminLimit, retryAfterSeconds: number): string {
  const wait = waitInWords(retryAfterSeconds);
  return limit === 'address'
    ? `Too many wrong ClientSecrets were sent for this app from this address in the last minute: every admin attempt from it is refused for ${wait}, ` +
        'the right secret too. Behind a shared address (a NAT, a proxy), the mistakes of every client behind it count.'
    : `Too many wrong ClientSecrets were sent for this app in the last minute, from any address: every admin attempt is refused for ${wait}, ` +
        'the right secret too. Someone may be guessing; the app\u2019s events say from where.';
}

/** A wait as a person says it: seconds up to a minute, then whole minutes (rounded up). */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}
