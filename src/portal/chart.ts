import type { Clock } from '../clock.js';
import { COUNT_PERIODS, eventCountQuery, type EventCountQuery, type EventCountsDescription } from '../events/counts.js';
import { html, type Html } from './html.js';
import { utcDay, utcText } from './time.js';

// The events page's chart of tokens issued and refused: counts in, inline SVG out. No HTTP, no
// store: the page asks the event log for the counts and hands them here. The SVG is styled with
// presentation attributes and classes (the portal's CSP blocks `style` attributes).

export type ChartPeriod = 'hour' | 'day';

/** Tokens of one hour or day. */
export interface TokenBucket {
  /** UNIX ms, the start of the hour or day (UTC). */
  start: number;
  admin: number;
  anonymous: number;
  /** Refused requests: a wrong secret, key or token (`token.refused`), and admin attempts throttled (`token.throttled`). */
  refused: number;
  /** Of `refused`, the admin attempts refused (429) by the limits on failed admin attempts. */
  throttled: number;
}

/** Every hour or day of a span, those without events as zeros, oldest first. */
export interface TokenSeries {
  per: ChartPeriod;
  buckets: TokenBucket[];
}

const HOUR = COUNT_PERIODS.hour;
const DAY = COUNT_PERIODS.day;
/** How many buckets each chart shows: the last day in hours, the last month in days. */
const SPAN: Record<ChartPeriod, number> = { hour: 24, day: 30 };

/** The counts the two charts need: the last 24 hours (this one included), and the last 30 days (today included). */
export function chartQueries(clock: Clock): Record<ChartPeriod, EventCountQuery> {
  const now = clock.now();
  const query = (per: ChartPeriod): EventCountQuery => {
    const period = COUNT_PERIODS[per];
    const current = now - (now % period);
    return eventCountQuery({ per, since: current - (SPAN[per] - 1) * period, until: now + 1 }, now);
  };
  return { hour: query('hour'), day: query('day') };
}

/** The counts of `token.issued`, and of `token.refused` and `token.throttled` (both refused), per bucket, with a zero for every bucket without any. */
export function tokenSeries(counts: EventCountsDescription): TokenSeries {
  const per: ChartPeriod = counts.per === 'day' ? 'day' : 'hour';
  const period = per === 'day' ? DAY : HOUR;
  const since = Date.parse(counts.since);
  const until = Date.parse(counts.until);
  const buckets: TokenBucket[] = [];
  const byStart = new Map<number, TokenBucket>();
  for (let start = since; start < until; start += period) {
    const bucket = { start, admin: 0, anonymous: 0, refused: 0, throttled: 0 };
    buckets.push(bucket);
    byStart.set(start, bucket);
  }
  for (const { start, counts: kinds } of counts.buckets) {
    const bucket = byStart.get(Date.parse(start));
    if (bucket === undefined) continue;
    for (const kind of kinds) {
      if (kind.type === 'token.refused') bucket.refused += kind.count;
      else if (kind.type === 'token.throttled') {
        bucket.refused += kind.count;
        bucket.throttled += kind.count;
      } else if (kind.type === 'token.issued' && kind.principal === 'anonymous') bucket.anonymous += kind.count;
      else if (kind.type === 'token.issued') bucket.admin += kind.count;
    }
  }
  return { per, buckets };
}

export const issuedOf = (bucket: TokenBucket): number => bucket.admin + bucket.anonymous;

// Drawing units of the viewBox; the SVG scales to the width of the page.
const WIDTH = 640;
const HEIGHT = 250;
const LEFT = 66;
const RIGHT = 30;
const TOP = 14;
const BOTTOM = 56;
const PLOT_WIDTH = WIDTH - LEFT - RIGHT;
const PLOT_HEIGHT = HEIGHT - TOP - BOTTOM;

/** The top of the value axis and its step: 1, 2 or 5 times a power of ten, about four steps, whole numbers. */
export function valueAxis(max: number): { top: number; step: number } {
  if (max <= 0) return { top: 4, step: 1 };
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(
    1,
    [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough)!,
  );
  return { top: Math.ceil(max / step) * step, step };
}

/** A value on the axis, short: `900`, `1.5k`, `20k`. */
export function tickLabel(value: number): string {
  return value < 1000 ? String(value) : `${Number((value / 1000).toPrecision(3))}k`;
}

/** `17:00` for an hour, `23 Nov` for a day (UTC). */
export function bucketLabel(per: ChartPeriod, start: number): string {
  const date = new Date(start);
  if (per === 'hour') return `${String(date.getUTCHours()).padStart(2, '0')}:00`;
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]}`;
}

/** `2026-11-23 17:00 UTC` for an hour, `2026-11-23` for a day: as the table and the tooltips say it. */
export function bucketName(per: ChartPeriod, start: number): string {
  return per === 'hour' ? utcText(start) : utcDay(start);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** In words, what the chart shows: its totals and its worst hour or day of refusals. */
export function seriesSummary(series: TokenSeries): string {
  const span = series.per === 'hour' ? 'the last 24 hours' : 'the last 30 days';
  const issued = series.buckets.reduce((sum, bucket) => sum + issuedOf(bucket), 0);
  const refused = series.buckets.reduce((sum, bucket) => sum + bucket.refused, 0);
  const admin = series.buckets.reduce((sum, bucket) => sum + bucket.admin, 0);
  const throttled = series.buckets.reduce((sum, bucket) => sum + bucket.throttled, 0);
  let text = `In ${span}: ${plural(issued, 'token')} issued (${admin} admin, ${issued - admin} anonymous), ${plural(refused, 'request')} refused${throttled > 0 ? ` (${throttled} of them throttled after too many wrong secrets)` : ''}.`;
  const worst = series.buckets.reduce<TokenBucket | undefined>(
    (most, bucket) => (bucket.refused > (most?.refused ?? 0) ? bucket : most),
    undefined,
  );
  if (worst !== undefined)
    text += ` Most refusals in one ${series.per}: ${worst.refused}, ${series.per === 'hour' ? 'at' : 'on'} ${bucketName(series.per, worst.start)}.`;
  return text;
}

/**
 * The chart of a series: a figure with a caption, the SVG (bars of tokens issued, and hatched bars of
 * requests refused, side by side per hour or day; labelled axes), a legend, and the numbers as a
 * table for those who do not see the chart. `id` makes the ids inside unique on the page.
 */
export function tokenChart(series: TokenSeries, id: string, heading: string): Html {
  const { per, buckets } = series;
  const max = Math.max(0, ...buckets.map((bucket) => Math.max(issuedOf(bucket), bucket.refused)));
  const { top, step } = valueAxis(max);
  const slot = PLOT_WIDTH / Math.max(1, buckets.length);
  const barWidth = round(Math.max(1, slot * 0.42));
  const y = (value: number) => round(TOP + PLOT_HEIGHT - (value / top) * PLOT_HEIGHT);
  const labelEvery = per === 'hour' ? 4 : 5;
  const totals = {
    issued: buckets.reduce((sum, bucket) => sum + issuedOf(bucket), 0),
    refused: buckets.reduce((sum, bucket) => sum + bucket.refused, 0),
    throttled: buckets.reduce((sum, bucket) => sum + bucket.throttled, 0),
  };
  const ticks: number[] = [];
  for (let value = 0; value <= top; value += step) ticks.push(value);

  const bar = (kind: 'issued' | 'refused', value: number, x: number, name: string) =>
    value === 0
      ? null
      : html`<rect class="bar ${kind}" data-count="${value}" x="${round(x)}" y="${y(value)}" width="${barWidth}" height="${round(y(0) - y(value))}" fill="${kind === 'issued' ? ISSUED_COLOUR : `url(#${id}-hatch)`}"><title>${name}: ${plural(value, kind === 'issued' ? 'token' : 'request')} ${kind}</title></rect>`;

  return html`<figure class="chart" id="${id}" data-per="${per}" data-issued="${totals.issued}" data-refused="${totals.refused}" data-throttled="${totals.throttled}">
<figcaption><h3>${heading}</h3><p class="chart-summary">${totals.issued} issued, ${totals.refused > 0 ? html`<strong class="refused-total">${totals.refused} refused</strong>${totals.throttled > 0 ? ` (${totals.throttled} throttled)` : ''}` : '0 refused'}</p></figcaption>
<div class="chart-frame">
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMid meet" font-size="13">
<title id="${id}-title">${heading}: tokens issued and requests refused per ${per} (UTC)</title>
<desc id="${id}-desc">${seriesSummary(series)}</desc>
<defs>${hatch(`${id}-hatch`)}</defs>
<g class="grid">${ticks.map(
    (value) =>
      html`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(value)}" y2="${y(value)}" stroke="${value === 0 ? AXIS_COLOUR : GRID_COLOUR}" stroke-width="1"/><text class="tick" x="${LEFT - 6}" y="${y(value) + 4}" text-anchor="end" fill="${TEXT_COLOUR}">${tickLabel(value)}</text>`,
  )}</g>
<g class="bars">${buckets.map((bucket, index) => {
    const x = LEFT + index * slot + (slot - 2 * barWidth) / 2;
    const name = bucketName(per, bucket.start);
    return html`${bar('issued', issuedOf(bucket), x, name)}${bar('refused', bucket.refused, x + barWidth, name)}`;
  })}</g>
<g class="labels">${buckets.map((bucket, index) =>
    (buckets.length - 1 - index) % labelEvery === 0
      ? html`<text class="tick" x="${round(LEFT + (index + 0.5) * slot)}" y="${TOP + PLOT_HEIGHT + 18}" text-anchor="middle" fill="${TEXT_COLOUR}">${bucketLabel(per, bucket.start)}</text>`
      : null,
  )}</g>
<text class="axis-title" x="${LEFT + PLOT_WIDTH / 2}" y="${HEIGHT - 8}" text-anchor="middle" fill="${TEXT_COLOUR}">${per === 'hour' ? 'Hour (UTC)' : 'Day (UTC)'}</text>
<text class="axis-title" transform="rotate(-90)" x="${-(TOP + PLOT_HEIGHT / 2)}" y="16" text-anchor="middle" fill="${TEXT_COLOUR}">${per === 'hour' ? 'Per hour' : 'Per day'}</text>
</svg>
</div>
${legend(`${id}-legend`)}
<details class="chart-numbers">
<summary>The numbers per ${per}</summary>
<table>
<caption>${heading}, per ${per === 'hour' ? 'hour' : 'day'} (UTC)</caption>
<thead><tr><th scope="col">${per === 'hour' ? 'Hour' : 'Day'}</th><th scope="col">Admin tokens issued</th><th scope="col">Anonymous tokens issued</th><th scope="col">Requests refused</th><th scope="col">Of those, throttled</th></tr></thead>
<tbody>${[...buckets]
    .reverse()
    .map(
      (bucket) =>
        html`<tr><th scope="row">${bucketName(per, bucket.start)}</th><td>${bucket.admin}</td><td>${bucket.anonymous}</td><td>${bucket.refused}</td><td>${bucket.throttled}</td></tr>`,
    )}</tbody>
</table>
</details>
</figure>`;
}

// Blue and red, each 5:1 or more against white; the refused bars are hatched as well, so that the
// two series differ without colour too.
const ISSUED_COLOUR = '#1f5fbf';
const REFUSED_COLOUR = '#b3261e';
const TEXT_COLOUR = '#505b6b';
const AXIS_COLOUR = '#505b6b';
const GRID_COLOUR = '#d5dbe3';

function hatch(patternId: string): Html {
  return html`<pattern id="${patternId}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="${REFUSED_COLOUR}"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/></pattern>`;
}

function legend(id: string): Html {
  return html`<ul class="legend" aria-label="Legend">
<li><svg class="swatch" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true"><rect width="16" height="16" fill="${ISSUED_COLOUR}"/></svg>Tokens issued (admin and anonymous)</li>
<li><svg class="swatch" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true"><defs>${hatch(`${id}-hatch`)}</defs><rect width="16" height="16" fill="url(#${id}-hatch)"/></svg>Requests refused (wrong secret, key or token; admin attempts throttled after too many wrong secrets)</li>
</ul>`;
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
