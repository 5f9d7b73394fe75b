/** A lifetime in the largest unit it is a whole number of: `2 hours`. */
export function lifetime(seconds: number | null): string {
  if (seconds === null) return 'no limit';
  const [amount, unit] = inLargestUnit(seconds);
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

/** A lifetime as a number of the largest unit it is a whole number of: `[2, 'hour']`. */
export function inLargestUnit(seconds: number): [number, LifetimeUnit] {
  const [unit, size] = LIFETIME_UNITS.find(([, size]) => seconds % size === 0) ?? ['second', 1];
  return [seconds / size, unit];
}

/** The units a lifetime is shown and typed in, the largest first. */
export const LIFETIME_UNITS = [
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
  ['second', 1],
] as const;

export type LifetimeUnit = (typeof LIFETIME_UNITS)[number][0];
