import { MAX_LIFETIME_SECONDS } from '../apps/configuration.js';
import { TesseraError } from '../errors.js';

/** What the established service answers as `expires_in` for a token that never expires; no app's maximum lifetime is longer. */
export const NEVER_EXPIRES_IN = MAX_LIFETIME_SECONDS;
/** The largest instant a JavaScript Date can hold; anything later is not a date. */
export const MAX_INSTANT = 8_640_000_000_000_000;

/**
 * The instant (UNIX ms) a new token stops working, or null for never.
 * - No `expiresAt`: never, unless the app sets a maximum lifetime; then the token gets that maximum.
 * - `expiresAt` must be after `now` and within the maximum lifetime.
 */
export function resolveExpiry(now: number, requestedExpiresAt: number | null, maxLifetimeSeconds: number | null): number | null {
  const latest = maxLifetimeSeconds === null ? null : now + maxLifetimeSeconds * 1000;
  if (requestedExpiresAt === null) return latest;
  if (requestedExpiresAt <= now) {
    throw new TesseraError('invalid_request', 'expiresAt must be a time in the future (UNIX milliseconds, UTC).');
  }
  if (requestedExpiresAt > MAX_INSTANT) {
    throw new TesseraError('invalid_request', 'expiresAt is beyond the largest date the service accepts.');
  }
  if (latest !== null && requestedExpiresAt > latest) {
    throw new TesseraError('invalid_request', `expiresAt is beyond this app's maximum token lifetime of ${maxLifetimeSeconds} seconds.`);
  }
  return requestedExpiresAt;
}

/** `expires_in`: whole seconds from `now` to the expiry, rounded down; capped at the "never" value. */
export function expiresInSeconds(now: number, expiresAt: number | null): number {
  if (expiresAt === null) return NEVER_EXPIRES_IN;
  return Math.min(Math.floor((expiresAt - now) / 1000), NEVER_EXPIRES_IN);
}

/** A token requested to expire at T works until T and is refused from T on. */
export function isExpired(now: number, expiresAt: number | null): boolean {
  return expiresAt !== null && now >= expiresAt;
}
