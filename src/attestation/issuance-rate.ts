import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';

/** The most the attempts of a challenge are multiplied by under a high issuance rate. */
export const MAX_POW_RISE = 64;
const MINUTE_MS = 60_000;

interface AppMinutes {
  minute: number;
  count: number;
  previous: number;
}

/**
 * Anonymous token requests per app per minute on this instance, for the apps whose proof of work
 * rises with the rate (`powRisesAbovePerMinute`): the attempts a challenge needs double at the
 * threshold and at each doubling of the rate above it, up to `MAX_POW_RISE` times. Kept in memory
 * (one small record per such app), not shared: each instance raises the cost it sees.
 */
export class IssuanceRate {
  readonly #apps = new Map<string, AppMinutes>();

  note(app: AppRecord, now: number): void {
    if (app.configuration.powRisesAbovePerMinute === null) return;
    const minute = Math.floor(now / MINUTE_MS);
    const found = this.#apps.get(app.appId);
    if (found === undefined) this.#apps.set(app.appId, { minute, count: 1, previous: 0 });
    else if (found.minute === minute) found.count++;
    else {
      found.previous = found.minute === minute - 1 ? found.count : 0;
      found.minute = minute;
      found.count = 1;
    }
  }

  /** The attempts a challenge for the app needs now. */
  maxAttempts(app: AppRecord, now: number): number {
    const { powMaxAttempts, powRisesAbovePerMinute } = app.configuration;
    if (powRisesAbovePerMinute === null) return powMaxAttempts;
    return powMaxAttempts * this.rise(app.appId, powRisesAbovePerMinute, now);
  }

  /** What the base attempts are multiplied by: 1 below the threshold, 2 at it, 4 at twice it, … */
  rise(appId: string, threshold: number, now: number): number {
    const found = this.#apps.get(appId);
    if (found === undefined) return 1;
    const minute = Math.floor(now / MINUTE_MS);
    const perMinute = found.minute === minute ? Math.max(found.count, found.previous) : found.minute === minute - 1 ? found.count : 0;
    if (perMinute < threshold) return 1;
    return Math.min(MAX_POW_RISE, 2 ** (Math.floor(Math.log2(perMinute / threshold)) + 1));
  }
}
