import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { Actor } from '../request-context.js';
import { quoted } from 'tessera-tokens/internal/text.js';
import { actorOfEvent, type EventActor, type EventDetails, type EventType } from './event.js';

/** The resolution of stored counts: one row per app, UTC minute, type, principal and reason. */
export const COUNT_BUCKET_MS = 60_000;

/** How many events of one kind an app had in one period. */
export interface EventCount {
  appId: string;
  /** Start of the period, UNIX ms (a UTC minute as stored; a minute, hour or day as listed). */
  bucket: number;
  type: EventType;
  /** As recorded: for a refused request, the kind it asked to be (`actorOfEvent`). */
  principal: Actor | null;
  /** `details.reason` of the event (a refusal's), or null. */
  reason: string | null;
  count: number;
}

export function countBucketOf(at: number): number {
  return at - (at % COUNT_BUCKET_MS);
}

/** The `reason` a count is kept under: the event's `details.reason` when it is a string. */
export function countReasonOf(details: EventDetails): string | null {
  return typeof details.reason === 'string' ? details.reason : null;
}

export const COUNT_PERIODS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type CountPeriod = keyof typeof COUNT_PERIODS;

/** The most buckets one answer has: a day of minutes, two months of hours, four years of days. */
export const MAX_COUNT_BUCKETS = 1440;

/** The span of `…/events/counts` when `since` is not given: an hour of minutes, a day of hours, 30 days. */
const DEFAULT_SPAN_MS: Record<CountPeriod, number> = { minute: 3_600_000, hour: 86_400_000, day: 30 * 86_400_000 };

/** Counts per `per`: the buckets (minutes, hours or days) that start from `since` to before `until`. */
export interface EventCountQuery {
  per: CountPeriod;
  /** UNIX ms, the start of a bucket. */
  since: number;
  /** UNIX ms, exclusive. */
  until: number;
}

/** A date-time of RFC 3339 (`2026-01-31T12:00:00Z`, `…T12:00:00.250+01:00`), up to milliseconds. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/**
 * A counts query from its text form (`GET …/events/counts?per=&since=&until=`): `since` and
 * `until` are RFC 3339 date-times; an absent or empty value takes its default. `invalid_request`
 * for anything else.
 */
export function parseEventCountQuery(
  raw: { per?: string | undefined; since?: string | undefined; until?: string | undefined },
  now: number,
): EventCountQuery {
  return eventCountQuery({ per: periodOf(raw.per), since: parseInstant(raw.since, 'since'), until: parseInstant(raw.until, 'until') }, now);
}

/**
 * The buckets asked for, checked: `per` defaults to `hour`, `until` to `now`, `since` to a span
 * before `until` (an hour of minutes, a day of hours, 30 days). `since` is moved back to the start
 * of its bucket (UTC). At most `MAX_COUNT_BUCKETS` buckets.
 */
export function eventCountQuery(
  asked: { per?: CountPeriod | undefined; since?: number | undefined; until?: number | undefined },
  now: number,
): EventCountQuery {
  const per = asked.per ?? 'hour';
  const periodMs = COUNT_PERIODS[per];
  const until = asked.until ?? now;
  const requestedSince = asked.since ?? until - DEFAULT_SPAN_MS[per];
  if (requestedSince >= until) throw new TesseraError('invalid_request', 'since must be before until.');
  const since = requestedSince - (((requestedSince % periodMs) + periodMs) % periodMs);
  const buckets = Math.ceil((until - since) / periodMs);
  if (buckets > MAX_COUNT_BUCKETS) {
    throw new TesseraError(
      'invalid_request',
      `since to until spans ${buckets} buckets of a ${per}; at most ${MAX_COUNT_BUCKETS} are answered at once: narrow the span${per === 'day' ? '' : ', or ask for a longer per'}.`,
    );
  }
  return { per, since, until };
}

export function isCountPeriod(value: string): value is CountPeriod {
  return Object.hasOwn(COUNT_PERIODS, value);
}

function periodOf(raw: string | undefined): CountPeriod | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!isCountPeriod(raw)) throw new TesseraError('invalid_request', `Unknown period ${quoted(raw)}; per must be minute, hour or day.`);
  return raw;
}

/**
 * The instant of an RFC 3339 date-time parameter (`since`, `until`), in UNIX ms; undefined when absent
 * or empty. `invalid_request` naming the parameter for anything else.
 */
export function parseInstant(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const at = isDateTime(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(at) || at < 0) {
    throw new TesseraError('invalid_request', `${name} must be a date-time such as 2026-01-31T12:00:00Z, after 1970.`);
  }
  return at;
}

/** RFC 3339's form, and every field in its range: `Date.parse` alone reads February 30 as March 2. */
function isDateTime(text: string): boolean {
  if (!DATE_TIME.test(text)) return false;
  const fields = text.slice(0, 'YYYY-MM-DDTHH:MM:SS'.length);
  const utc = new Date(`${fields}Z`);
  return Number.isFinite(utc.getTime()) && utc.toISOString().startsWith(fields);
}

/** One kind of event in a counts answer: who caused it, or what a refused request attempted (`actorOfEvent`). */
export interface CountOfKind extends EventActor {
  type: EventType;
  reason: string | null;
  count: number;
}

export interface EventCountsDescription {
  appId: string;
  per: CountPeriod;
  since: string;
  until: string;
  /** Per kind of event over the whole span, the most frequent first. */
  totals: CountOfKind[];
  /** The buckets that have counts, oldest first; a bucket with none is left out. */
  buckets: { start: string; counts: CountOfKind[] }[];
}

/** The answer of `GET …/events/counts` (and `tessera events --counts --json`), from rows of one bucket of `per` each. */
export function describeCounts(appId: string, query: EventCountQuery, rows: readonly EventCount[]): EventCountsDescription {
  const totals = new Map<string, CountOfKind>();
  const buckets = new Map<number, CountOfKind[]>();
  for (const row of rows) {
    const kind = { type: row.type, ...actorOfEvent(row.type, row.principal), reason: row.reason };
    const key = kindLabel(kind);
    const total = totals.get(key);
    if (total === undefined) totals.set(key, { ...kind, count: row.count });
    else total.count += row.count;
    const bucket = buckets.get(row.bucket) ?? [];
    bucket.push({ ...kind, count: row.count });
    buckets.set(row.bucket, bucket);
  }
  return {
    appId,
    per: query.per,
    since: new Date(query.since).toISOString(),
    until: new Date(query.until).toISOString(),
    totals: [...totals.values()].sort((a, b) => b.count - a.count || (kindLabel(a) < kindLabel(b) ? -1 : 1)),
    buckets: [...buckets.entries()].sort(([a], [b]) => a - b).map(([start, counts]) => ({ start: new Date(start).toISOString(), counts })),
  };
}

/** `token.issued admin`, `token.refused attempted:admin invalid_client`: a kind of event as people read it. */
export function kindLabel(kind: Pick<CountOfKind, 'type' | 'principal' | 'attempted' | 'reason'>): string {
  return [kind.type, whoLabel(kind), kind.reason ?? ''].join(' ').trimEnd();
}

/** `admin`, `attempted:admin` (a refused request), or `-` (nobody known, nothing attempted). */
export function whoLabel({ principal, attempted }: EventActor): string {
  return principal ?? (attempted === null ? '-' : `attempted:${attempted}`);
}
