import { html, type Html } from './html.js';

// Instants as the portal shows them: always in UTC, and said so, so that every page reads alike
// whatever the developer's time zone; a `<time>` element carries the exact instant.

/** An instant given as ISO 8601 or as UNIX ms, in ISO 8601. */
function isoOf(instant: string | number): string {
  return typeof instant === 'number' ? new Date(instant).toISOString() : instant;
}

/** `2026-11-23`: the day of an instant, in UTC. */
export function utcDay(instant: string | number): string {
  return isoOf(instant).slice(0, 10);
}

/** `2026-11-23 17:02 UTC`, or to the second `2026-11-23 17:02:11 UTC`. */
export function utcText(instant: string | number, precision: 'minute' | 'second' = 'minute'): string {
  const iso = isoOf(instant);
  return `${iso.slice(0, 10)} ${iso.slice(11, precision === 'minute' ? 16 : 19)} UTC`;
}

/** `utcText` in a `<time>` element, whose `datetime` is the exact instant. */
export function utcTime(instant: string | number, precision: 'minute' | 'second' = 'minute'): Html {
  return html`<time datetime="${isoOf(instant)}">${utcText(instant, precision)}</time>`;
}
