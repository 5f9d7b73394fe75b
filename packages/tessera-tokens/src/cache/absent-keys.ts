import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import { ownKey } from './own-key.js';

/** How long an AppID or token the store did not have is answered as absent without asking it again. */
export const ABSENT_TTL_MS = 10_000;

/** What an absent key takes beyond its characters (measured: about 120 bytes for a 16-character AppID). */
const ABSENT_ENTRY_BYTES = 100;

/**
 * Keys (AppIDs, token selectors) that the store did not have, remembered for `ABSENT_TTL_MS` so that
 * a flood of made-up ones reads the store once each, not once a request. Forgotten sooner when the
 * store's change signal says what they name may have appeared; a key made up before an app or a
 * token was created with it cannot be, since AppIDs and selectors are random (an imported AppID is
 * announced by the change signal like any new app).
 */
export class AbsentKeys {
  readonly #keys: LRUCache<string, true>;

  constructor(maxBytes: number, clock: Clock) {
    this.#keys = new LRUCache<string, true>({
      maxSize: maxBytes,
      sizeCalculation: (_, key) => ABSENT_ENTRY_BYTES + 2 * key.length,
      ttl: ABSENT_TTL_MS,
      // The entries' ages from the injected clock; the default would read performance.now().
      perf: clock,
      // A clock read a lookup (tens of nanoseconds), not the timer lru-cache would set every millisecond to save it.
      ttlResolution: 0,
    });
  }

  has(key: string): boolean {
    return this.#keys.get(key) !== undefined;
  }

  add(key: string): void {
    this.#keys.set(ownKey(key), true);
  }

  delete(key: string): void {
    this.#keys.delete(key);
  }

  clear(): void {
    this.#keys.clear();
  }
}
