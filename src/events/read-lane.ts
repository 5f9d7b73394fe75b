import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';

/** Reads of one app in the lane at once; more are refused (429). */
export const MAX_READS_PER_APP = 4;

/**
 * Where reads of the audit log that may examine many rows (a filter that matches few of an app's
 * events, the counts of a chart) take turns: each goes a step at a time (`EVENT_SCAN_STEP` rows), and the process runs one
 * step per turn of the event loop, whoever's it is, so that between two steps the token checks,
 * issues and forward auths of every app waiting meanwhile are answered. A step on SQLite holds the
 * event loop for about a millisecond per thousand rows; on PostgreSQL, one step at a time also keeps
 * such reads to one connection of the pool. An app has at most `MAX_READS_PER_APP` in the lane at
 * once, so that one tenant looping over its own log cannot queue up the steps of the others'.
 */
export class ReadLane {
  readonly #waiting: (() => void)[] = [];
  readonly #inFlight = new Map<string, number>();
  #scheduled = false;
  #busy = false;

  /**
   * Runs `read` as one of the app's reads in the lane, which does each step of its work through
   * `step`; `TOO_MANY_REQUESTS` when the app has as many reads in the lane as it may.
   */
  async run<T>(appId: string, read: (step: Step) => Promise<T>): Promise<T> {
    const running = this.#inFlight.get(appId) ?? 0;
    if (running >= MAX_READS_PER_APP) {
      throw new TesseraError(
        'TOO_MANY_REQUESTS',
        `This app has ${MAX_READS_PER_APP} reads of its events or counts under way already; try again when they are answered.`,
        { retryAfterSeconds: 1 },
      );
    }
    this.#inFlight.set(appId, running + 1);
    try {
      return await read((work) => this.#step(work));
    } finally {
      const left = (this.#inFlight.get(appId) ?? 1) - 1;
      if (left === 0) this.#inFlight.delete(appId);
      else this.#inFlight.set(appId, left);
    }
  }

  /** `work` at its turn: one step at a time in the process, each in a turn of the event loop of its own, first come first served. */
  async #step<T>(work: () => MaybePromise<T>): Promise<T> {
    await new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      this.#next();
    });
    try {
      return await work();
    } finally {
      this.#busy = false;
      this.#next();
    }
  }

  #next(): void {
    if (this.#busy || this.#scheduled || this.#waiting.length === 0) return;
    this.#scheduled = true;
    // A later turn of the event loop: whatever arrived meanwhile is answered first.
    setImmediate(() => {
      this.#scheduled = false;
      this.#busy = true;
      this.#waiting.shift()!();
    });
  }
}

/** One step of a read in the lane. */
export type Step = <T>(work: () => MaybePromise<T>) => Promise<T>;
