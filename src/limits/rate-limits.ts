import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { TesseraError } from '../errors.js';

export interface RateLimitSettings {
  enabled: boolean;
  /** Token requests one client address may make per minute. */
  tokenRequestsPerAddressPerMinute: number;
  /** Failed admin-token attempts one app may see per minute before admin attempts are refused. */
  adminFailuresPerAppPerMinute: number;
}

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  enabled: true,
  tokenRequestsPerAddressPerMinute: 1200,
  adminFailuresPerAppPerMinute: 10,
};

/** The throttles of the token endpoint. Every method resolves or throws `TOO_MANY_REQUESTS`. */
export interface RateLimits {
  checkTokenRequest(address: string): Promise<void>;
  checkAdminAttempt(appId: string): Promise<void>;
  recordAdminFailure(appId: string): Promise<void>;
}

export const NO_RATE_LIMITS: RateLimits = {
  checkTokenRequest: async () => {},
  checkAdminAttempt: async () => {},
  recordAdminFailure: async () => {},
};

/** Per-process limits; each instance counts on its own. */
export function createRateLimits(settings: RateLimitSettings): RateLimits {
  if (!settings.enabled) return NO_RATE_LIMITS;
  const perAddress = new RateLimiterMemory({ points: settings.tokenRequestsPerAddressPerMinute, duration: 60 });
  const adminFailures = new RateLimiterMemory({ points: settings.adminFailuresPerAppPerMinute, duration: 60 });
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
      await adminFailures.penalty(appId, 1);
    },
  };
}

function tooManyRequests(rejection: unknown): TesseraError {
  if (!(rejection instanceof RateLimiterRes)) throw rejection;
  return new TesseraError('TOO_MANY_REQUESTS', 'Too many requests; try again later.', {
    retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)),
  });
}
