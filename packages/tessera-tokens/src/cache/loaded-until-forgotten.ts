import type { MaybePromise } from '../maybe-promise.js';

/**
 * A value read from the store when first needed and kept in memory until `forget` (the store's
 * change signal): concurrent first uses share one read, and a read begun before a `forget` is
 * handed to its callers but not kept. A failed read is not kept either.
 */
export class LoadedUntilForgotten<T> {
  #value: T | undefined;
  #loading: Promise<T> | undefined;
  #generation = 0;

  constructor(private readonly load: () => Promise<T>) {}

  /** The value: at once once loaded, else the shared read. */
  get(): MaybePromise<T> {
    return this.#value ?? this.#read();
  }

  forget(): void {
    this.#generation++;
    this.#value = undefined;
    this.#loading = undefined;
  }

  #read(): Promise<T> {
    if (this.#loading !== undefined) return this.#loading;
    const generation = this.#generation;
    const loading = this.load().then(
      (value) => {
        if (generation === this.#generation) this.#value = value;
        if (this.#loading === loading) this.#loading = undefined;
        return value;
      },
      (error: unknown) => {
        if (this.#loading === loading) this.#loading = undefined;
        throw error;
      },
    );
    this.#loading = loading;
    return loading;
  }
}
