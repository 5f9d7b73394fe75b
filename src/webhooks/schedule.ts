/**
 * When a delivery that failed is tried again: within seconds at first, as Svix's first retry is,
 * then further and further apart, for about three days in all; after the last, it is marked failed
 * (and can be sent again by hand). Delays after each failed attempt, in ms.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5_000,
  60_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
  14 * 3_600_000,
  14 * 3_600_000,
  16 * 3_600_000,
];

/** How many attempts a delivery gets in all: the first, then one per delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** When to try again after `attempts` failed attempts (UNIX ms), or null: give up, the delivery failed. */
export function nextAttemptAt(attempts: number, failedAt: number): number | null {
  const delay = RETRY_DELAYS_MS[attempts - 1];
  return delay === undefined ? null : failedAt + delay;
}
