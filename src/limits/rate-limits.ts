import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { TesseraError } from '../errors.js';

export interface RateLimitSettings {
  enabled: boolean;
  /** Token requests one client address may make per minute. */
  tokenRequestsPerAddressPerMinute: number;
  /** Failed admin-token attempts one app may see per minute before admin attempts are refused. */
  adminFailuresPerAppPerMinute: number;
  /** With a Redis URL (REDIS_URL), the counts are shared by every instance using it. */
  redisUrl?: string | undefined;
  /** Prefix of the Redis keys (REDIS_KEY_PREFIX), so that several deployments can share a Redis. */
  redisKeyPrefix?: string;
}

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  enabled: true,
  tokenRequestsPerAddressPerMinute: 1200,
  adminFailuresPerAppPerMinute: 10,
};

/** The throttles of the token endpoint. Every check resolves or throws `TOO_MANY_REQUESTS`. */
export interface RateLimits {
  checkTokenRequest(address: string): Promise<void>;
  /** For admin credentials found right: throws once the app's failures have reached the limit. */
  checkAdminAttempt(appId: string): Promise<void>;
  /** Counts a failed admin attempt; throws if it is beyond the limit (its outcome must not be told). */
  recordAdminFailure(appId: string): Promise<void>;
  /** Resolves once shared counting works (Redis connected), or after `timeoutMs` if it does not. */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const NO_RATE_LIMITS: RateLimits = {
  checkTokenRequest: async () => {},
  checkAdminAttempt: async () => {},
  recordAdminFailure: async () => {},
  ready: async () => {},
  close: async () => {},
};

/**
 * Limits counted in memory (each instance on its own) or, with `redisUrl`, in Redis (shared by
 * every instance). While Redis cannot be reached, each instance counts in memory meanwhile: the
 * limits still hold per instance, and no request waits for Redis.
 */
export function createRateLimits(settings: RateLimitSettings, onWarning: (message: string, error: unknown) => void = () => {}): RateLimits {
  if (!settings.enabled) return NO_RATE_LIMITS;
  const perAddressOptions = { points: settings.tokenRequestsPerAddressPerMinute, duration: 60 };
  const adminFailuresOptions = { points: settings.adminFailuresPerAppPerMinute, duration: 60 };
  let redis: Redis | undefined;
  let perAddress: RateLimiterAbstract = new RateLimiterMemory(perAddressOptions);
  let adminFailures: RateLimiterAbstract = new RateLimiterMemory(adminFailuresOptions);
  if (settings.redisUrl !== undefined) {
    redis = new Redis(settings.redisUrl, {
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
    const prefix = settings.redisKeyPrefix ?? 'tessera';
    const shared = (keyPrefix: string, options: { points: number; duration: number }, insurance: RateLimiterAbstract) =>
      new RateLimiterRedis({ ...options, storeClient: redis, keyPrefix, rejectIfRedisNotReady: true, insuranceLimiter: insurance });
    perAddress = shared(`${prefix}:token-requests`, perAddressOptions, perAddress);
    adminFailures = shared(`${prefix}:admin-failures`, adminFailuresOptions, adminFailures);
  }
  return {
    async checkTokenRequest(address) {
      try {
        await perAddress.consume(address);
      } catch (rejection) {
        throw tooManyRequests(rejection);
      }
    },
    async checkAdminAttempt(appId) {
      const used = await adminFailures.get(appId);
      if (used !== null && used.consumedPoints >= settings.adminFailuresPerAppPerMinute) throw tooManyRequests(used);
    },
    async recordAdminFailure(appId) {
      const used = await adminFailures.penalty(appId, 1);
      if (used.consumedPoints > settings.adminFailuresPerAppPerMinute) throw tooManyRequests(used);
    },
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

function tooManyRequests(rejection: unknown): TesseraError {
  if (!(rejection instanceof RateLimiterRes)) throw rejection;
  return new TesseraError('TOO_MANY_REQUESTS', 'Too many requests; try again later.', {
    retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)),
  });
}
