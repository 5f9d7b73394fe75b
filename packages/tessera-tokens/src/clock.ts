/** Source of the current time in UNIX milliseconds; injected so that tests can move time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
