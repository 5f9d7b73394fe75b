/**
 * A value now, or later. The hot paths answer from memory almost always; returning the value itself
 * then, and a promise only when the store must be read, spares every request a promise and a
 * microtask. `await` works on both.
 */
export type MaybePromise<T> = T | Promise<T>;

/** Applies `next` now if the value is here, or once it arrives. */
export function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
