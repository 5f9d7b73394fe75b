import {
  COUNT_BUCKET_MS,
  COUNT_PERIODS,
  type CountPeriod,
  type EventCountQuery,
  type EventCountsDescription,
} from '../../../events/counts.js';
import { html, type Html } from '../../html.js';
import { utcDay, utcText } from '../../time.js';

// The events page's chart of tokens issued and refused: counts in, inline SVG out. No HTTP, no
// store: the page asks the event log for the counts and hands them here. The SVG is styled with
// presentation attributes and classes (the portal's CSP blocks `style` attributes).

/** A chart's buckets: minutes, hours or days (UTC), as the counts are answered. */
export type ChartPeriod = CountPeriod;

/** Tokens of one minute, hour or day. */
export interface TokenBucket {
  /** UNIX ms, the start of the minute, hour or day (UTC). */
  start: number;
  admin: number;
  anonymous: number;
  /** Refused requests: a wrong secret, key or token (`token.refused`), and admin attempts throttled (`token.throttled`). */
  refused: number;
  /** Of `refused`, the admin attempts refused (429) by the limits on failed admin attempts. */
  throttled: number;
}

/** Every minute, hour or day of a span, those without events as zeros, oldest first. */
export interface TokenSeries {
  per: ChartPeriod;
  buckets: TokenBucket[];
}

const HOUR = COUNT_PERIODS.hour;
const DAY = COUNT_PERIODS.day;

/** Minutes for spans up to 2 hours, hours up to 2 days, days beyond: from 15 to 120 minutes, 3 to 48 hours, 3 to 90 days. */
export function periodFor(spanMs: number): ChartPeriod {
  if (spanMs <= 2 * HOUR) return 'minute';
  if (spanMs <= 2 * DAY) return 'hour';
  return 'day';
}

/**
 * The counts a chart of `since` to `until` (exclusive) asks for: never from before `notBefore` (the
 * app's creation: a new app's month is not a month of empty days), in buckets that fit the span left
 * (`periodFor`); null when nothing is left (the app was created after `until`). The counts are kept
 * per minute, so the span starts with the minute of its start; its first and last buckets count
 * only the minutes within it.
 */
export function chartQuery(since: number, until: number, notBefore = Number.NEGATIVE_INFINITY): EventCountQuery | null {
  const start = Math.max(since, notBefore);
  const first = start - (((start % COUNT_BUCKET_MS) + COUNT_BUCKET_MS) % COUNT_BUCKET_MS);
  if (first >= until) return null;
  return { per: periodFor(until - first), since: first, until };
}

/** The counts of `token.issued`, and of `token.refused` and `token.throttled` (both refused), per bucket, with a zero for every bucket without any. */
export function tokenSeries(counts: EventCountsDescription): TokenSeries {
  const per = counts.per;
  const period = COUNT_PERIODS[per];
  const since = Date.parse(counts.since);
  const until = Date.parse(counts.until);
  const buckets: TokenBucket[] = [];
  const byStart = new Map<number, TokenBucket>();
  for (let start = since - (since % period); start < until; start += period) {
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
const MAX_BAR_WIDTH = 28;

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

/** `17:02` for a minute, `17:00` for an hour, `23 Nov` for a day (UTC). */
export function bucketLabel(per: ChartPeriod, start: number): string {
  const date = new Date(start);
  if (per === 'day') return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]}`;
  return `${String(date.getUTCHours()).padStart(2, '0')}:${String(date.getUTCMinutes()).padStart(2, '0')}`;
}

/** `2026-11-23 17:02 UTC` for a minute or an hour, `2026-11-23` for a day: as the table and the tooltips say it. */
export function bucketName(per: ChartPeriod, start: number): string {
  return per === 'day' ? utcDay(start) : utcText(start);
}

/** The steps labels may be apart, in buckets: round numbers of minutes, hours or days. */
const LABEL_STEPS: Record<ChartPeriod, readonly number[]> = {
  minute: [1, 2, 5, 10, 15, 30, 60],
  hour: [1, 2, 3, 4, 6, 12, 24],
  day: [1, 2, 5, 7, 10, 15, 30],
};
/** Labels along the time axis at most: they stay apart on a phone, where the chart is drawn small. */
const MAX_LABELS = 6;

/**
 * Which buckets the time axis labels: at most `MAX_LABELS`, a round step apart. Minutes and hours on
 * round times (`17:00`, `17:10`; `00:00`, `04:00`); days counted back from the last, so that today
 * is labelled.
 */
export function labelledBuckets(series: TokenSeries): Set<number> {
  const { per, buckets } = series;
  const step = LABEL_STEPS[per].find((candidate) => Math.ceil(buckets.length / candidate) <= MAX_LABELS) ?? LABEL_STEPS[per].at(-1)!;
  const labelled = new Set<number>();
  buckets.forEach((bucket, index) => {
    const date = new Date(bucket.start);
    const position =
      per === 'minute' ? date.getUTCHours() * 60 + date.getUTCMinutes() : per === 'hour' ? date.getUTCHours() : buckets.length - 1 - index;
    if (position % step === 0) labelled.add(index);
  });
  return labelled;
}

const PER_WORDS: Record<ChartPeriod, { unit: string; axis: string; value: string }> = {
  minute: { unit: 'minute', axis: 'Minute (UTC)', value: 'Per minute' },
  hour: { unit: 'hour', axis: 'Hour (UTC)', value: 'Per hour' },
  day: { unit: 'day', axis: 'Day (UTC)', value: 'Per day' },
};

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/**
 * In words, what the chart shows: its totals and its worst minute, hour or day of refusals. `span`
 * starts the sentence: `In the last 24 hours`, `From 2026-11-23 17:02 to 17:05 UTC`.
 */
export function seriesSummary(series: TokenSeries, span: string): string {
  const issued = series.buckets.reduce((sum, bucket) => sum + issuedOf(bucket), 0);
  const refused = series.buckets.reduce((sum, bucket) => sum + bucket.refused, 0);
  const admin = series.buckets.reduce((sum, bucket) => sum + bucket.admin, 0);
  const throttled = series.buckets.reduce((sum, bucket) => sum + bucket.throttled, 0);
  let text = `${span}: ${plural(issued, 'token')} issued (${admin} admin, ${issued - admin} anonymous), ${plural(refused, 'request')} refused${throttled > 0 ? ` (${throttled} of them throttled after too many wrong secrets)` : ''}.`;
  const worst = series.buckets.reduce<TokenBucket | undefined>(
    (most, bucket) => (bucket.refused > (most?.refused ?? 0) ? bucket : most),
    undefined,
  );
  if (worst !== undefined)
    text += ` Most refusals in one ${series.per}: ${worst.refused}, ${series.per === 'day' ? 'on' : 'at'} ${bucketName(series.per, worst.start)}.`;
  return text;
}

/**
 * The chart of a series: a figure with a caption, the SVG (bars of tokens issued, and hatched bars of
 * requests refused, side by side per minute, hour or day; labelled axes), a legend, and the numbers
 * as a table for those who do not see the chart. `id` makes the ids inside unique on the page;
 * `span` starts the summary in words (`seriesSummary`), `note` says more below the caption.
 */
export function tokenChart(series: TokenSeries, id: string, heading: string, span: string, note: Html | string | null = null): Html {
  const { per, buckets } = series;
  const max = Math.max(0, ...buckets.map((bucket) => Math.max(issuedOf(bucket), bucket.refused)));
  const { top, step } = valueAxis(max);
  const slot = PLOT_WIDTH / Math.max(1, buckets.length);
  // Side by side in each slot; no wider than a few characters, when a short span has few slots.
  const barWidth = round(Math.min(MAX_BAR_WIDTH, Math.max(1, slot * 0.42)));
  const y = (value: number) => round(TOP + PLOT_HEIGHT - (value / top) * PLOT_HEIGHT);
  const labelled = labelledBuckets(series);
  const words = PER_WORDS[per];
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
<figcaption><h3>${heading}</h3><p class="chart-summary">${totals.issued} issued, ${totals.refused > 0 ? html`<strong class="refused-total">${totals.refused} refused</strong>${totals.throttled > 0 ? ` (${totals.throttled} throttled)` : ''}` : '0 refused'}</p>${note === null ? null : html`<p class="chart-note">${note}</p>`}</figcaption>
<div class="chart-frame">
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMid meet" font-size="13">
<title id="${id}-title">${heading}: tokens issued and requests refused per ${words.unit} (UTC)</title>
<desc id="${id}-desc">${seriesSummary(series, span)}</desc>
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
    labelled.has(index)
      ? html`<text class="tick" x="${round(LEFT + (index + 0.5) * slot)}" y="${TOP + PLOT_HEIGHT + 18}" text-anchor="middle" fill="${TEXT_COLOUR}">${bucketLabel(per, bucket.start)}</text>`
      : null,
  )}</g>
<text class="axis-title" x="${LEFT + PLOT_WIDTH / 2}" y="${HEIGHT - 8}" text-anchor="middle" fill="${TEXT_COLOUR}">${words.axis}</text>
<text class="axis-title" transform="rotate(-90)" x="${-(TOP + PLOT_HEIGHT / 2)}" y="16" text-anchor="middle" fill="${TEXT_COLOUR}">${words.value}</text>
</svg>
</div>
${legend(`${id}-legend`)}
<details class="chart-numbers">
<summary>The numbers per ${words.unit}</summary>
<table>
<caption>${heading}, per ${words.unit} (UTC)</caption>
<thead><tr><th scope="col">${words.unit[0]!.toUpperCase()}${words.unit.slice(1)}</th><th scope="col">Admin tokens issued</th><th scope="col">Anonymous tokens issued</th><th scope="col">Requests refused</th><th scope="col">Of those, throttled</th></tr></thead>
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
