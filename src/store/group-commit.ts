import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';

/** `seconds`: how long the batch's transaction took. */
export type BatchListener = (size: number, seconds: number) => void;

interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions<T, R> {
  /** Writes a batch in one transaction; throws if any item fails. Resolves with each item's result, in their order. */
  writeBatch(items: T[]): MaybePromise<R[]>;
  /** Writes one item on its own (after a batch failed, so that one bad item fails alone). */
  writeOne(item: T): MaybePromise<R>;
  /** An error after which writing items one by one is pointless (the database is unreachable). */
  failsEverything?(error: unknown): boolean;
  maxBatch?: number;
  /** Batches written at the same time (a pool of connections can take several). */
  maxInFlight?: number;
}

/**
 * Group commit: the writes that arrive within one turn of the event loop are written in one
 * transaction, and each caller learns of its write only once that transaction has committed. A
 * commit is the expensive part of a write, so under load many writes share one.
 */
export class GroupCommit<T, R> {
  #queue: Pending<T, R>[] = [];
  #inFlight = 0;
  #scheduled = false;
  #drained: (() => void)[] = [];
  #onBatch: BatchListener | undefined;

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  /** Told the size and duration of every batch written (the metrics); one listener at most. */
  onBatch(listener: BatchListener): void {
    this.#onBatch = listener;
  }

  /** Resolves with the item's result once its batch has committed. */
  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /** Resolves once nothing is queued or being written (used before closing the store). */
  drain(): Promise<void> {
    if (this.#queue.length === 0 && this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#drained.push(resolve);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#inFlight >= (this.options.maxInFlight ?? 1)) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#writeNextBatch();
    });
  }

  async #writeNextBatch(): Promise<void> {
    const batch = this.#queue.splice(0, this.options.maxBatch ?? 1000);
    if (batch.length === 0) return;
    this.#inFlight++;
    this.#schedule(); // another batch may start while this one is written
    const started = this.#onBatch === undefined ? 0 : performance.now();
    try {
      const results = await this.options.writeBatch(batch.map((pending) => pending.item));
      this.#onBatch?.(batch.length, (performance.now() - started) / 1000);
      batch.forEach((pending, index) => pending.resolve(results[index]!));
    } catch (error) {
      if (this.options.failsEverything?.(error) === true) {
        for (const pending of batch) pending.reject(error);
      } else {
        for (const pending of batch) {
          try {
            pending.resolve(await this.options.writeOne(pending.item));
          } catch (itemError) {
            pending.reject(itemError);
          }
        }
      }
    } finally {
      this.#inFlight--;
      this.#schedule();
      if (this.#queue.length === 0 && this.#inFlight === 0) for (const resolve of this.#drained.splice(0)) resolve();
    }
  }
}
