import { isTesseraError, TesseraError } from 'tessera-tokens/internal/errors.js';
import { COUNT_PERIODS, parseInstant, type CountPeriod } from '../../../events/counts.js';
import type { EventType } from '../../../events/event.js';
import {
  isClientAddress,
  MAX_CLIENT_ADDRESS_LENGTH,
  MAX_EVENT_SPAN_MS,
  parseEventFilter,
  type EventFilter,
} from '../../../events/query.js';
import { utcText } from '../../time.js';

// What the events page shows (src/portal/pages/events/routes.ts): a time range, the last few minutes to
// 30 days or from one instant to another, and the filters of its list. It comes from the page's one
// GET form, so it is its URL: links (the pager, an event's address, an event's page) carry it.

/** The ranges that end now: a number of minutes, hours or days, the current one included. */
export const RELATIVE_RANGES = {
  '15m': { label: 'Last 15 minutes', words: 'the last 15 minutes', per: 'minute', buckets: 15 },
  '1h': { label: 'Last hour', words: 'the last hour', per: 'minute', buckets: 60 },
  '1d': { label: 'Last 24 hours', words: 'the last 24 hours', per: 'hour', buckets: 24 },
  '30d': { label: 'Last 30 days', words: 'the last 30 days', per: 'day', buckets: 30 },
} as const satisfies Record<string, { label: string; words: string; per: CountPeriod; buckets: number }>;

export type RelativeRange = keyof typeof RELATIVE_RANGES;
export type RangeName = RelativeRange | 'custom';

export const DEFAULT_RANGE: RelativeRange = '1d';

export function isRelativeRange(value: string): value is RelativeRange {
  return Object.hasOwn(RELATIVE_RANGES, value);
}

/** The range and the filters of the events page, checked. */
export interface EventView {
  range: RangeName;
  /** UNIX ms: the first instant of the range (for a relative range, the start of its first minute, hour or day). */
  since: number;
  /** UNIX ms, exclusive: the end of a custom range; for a relative range, just after now. */
  until: number;
  /** A custom range's ends as the form's fields show them (`2026-01-31T14:02`, UTC); empty for a relative range. */
  from: string;
  to: string;
  type?: EventType;
  reason?: string;
  clientAddress?: string;
}

/** The fields of the form a person types into, which a mistake is shown beside. */
export type ViewField = 'range' | 'from' | 'to' | 'clientAddress';

/** A mistake in what was typed into the form: shown on the page beside its field, with status 400. */
export class ViewMistake extends Error {
  constructor(
    readonly field: ViewField,
    message: string,
  ) {
    super(message);
  }
}

/** The page's query parameters, each given once (or absent). */
export interface RawView {
  range?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  type?: string | undefined;
  reason?: string | undefined;
  clientAddress?: string | undefined;
}

/** `2026-01-31T14:02` (what `<input type=datetime-local>` sends), to the second or less too: taken as UTC. */
const LOCAL_DATE_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?$/;
/** The longest `from` or `to` taken: an RFC 3339 date-time with milliseconds and an offset. */
const MAX_INSTANT_LENGTH = 29;

/**
 * The view a query asks for. `range` is one of `RELATIVE_RANGES` (default `1d`) or `custom`, which
 * takes `from` and `to` (UTC, as the form's `datetime-local` fields send them, or RFC 3339); `from`
 * and `to` without a `range` are a custom range too (a link), with one they are left aside (the form
 * sends them whatever range is chosen). A type or reason that is not one is `invalid_request` (they
 * come from a list to choose from, or a link); what a person types is a `ViewMistake`.
 */
export function parseEventView(raw: RawView, now: number): EventView {
  const filter = parseEventFilter({ type: raw.type, reason: raw.reason });
  const address = (raw.clientAddress ?? '').trim();
  if (address !== '') {
    if (!isClientAddress(address)) {
      throw new ViewMistake('clientAddress', 'The client address must be an IPv4 or IPv6 address, such as 203.0.113.7 or 2001:db8::1.');
    }
    filter.clientAddress = address;
  }
  const from = (raw.from ?? '').trim();
  const to = (raw.to ?? '').trim();
  const range = present(raw.range) ? raw.range : from !== '' || to !== '' ? 'custom' : DEFAULT_RANGE;
  if (isRelativeRange(range)) return { range, ...relativeSpan(range, now), from: '', to: '', ...filter };
  if (range !== 'custom') throw new ViewMistake('range', 'Choose one of the time ranges.');
  if (from === '') throw new ViewMistake('from', 'A custom range needs a From: a date and a time in UTC, such as 2026-01-31T14:02.');
  if (to === '') throw new ViewMistake('to', 'A custom range needs a To: a date and a time in UTC, such as 2026-01-31T14:05.');
  const since = instantOf(from, 'from');
  const until = instantOf(to, 'to');
  if (since >= until) throw new ViewMistake('to', 'To must be after From.');
  if (until - since > MAX_EVENT_SPAN_MS) {
    throw new ViewMistake('to', `From and To must be at most ${MAX_EVENT_SPAN_MS / 86_400_000} days apart.`);
  }
  return { range: 'custom', since, until, from: fieldText(since), to: fieldText(until), ...filter };
}

/** A relative range: from the start of its first minute, hour or day (the current one is its last) to just after now. */
function relativeSpan(range: RelativeRange, now: number): { since: number; until: number } {
  const { per, buckets } = RELATIVE_RANGES[range];
  const period = COUNT_PERIODS[per];
  return { since: now - (now % period) - (buckets - 1) * period, until: now + 1 };
}

function instantOf(typed: string, field: 'from' | 'to'): number {
  const name = field === 'from' ? 'From' : 'To';
  const local = typed.length <= MAX_INSTANT_LENGTH ? LOCAL_DATE_TIME.exec(typed) : null;
  const text = local === null ? typed : `${local[1]}${local[2] ?? ':00'}Z`;
  try {
    const at = text.length <= MAX_INSTANT_LENGTH ? parseInstant(text, field) : undefined;
    if (at !== undefined) return at;
  } catch (error) {
    if (!isTesseraError(error)) throw error;
  }
  throw new ViewMistake(field, `${name} must be a date and a time in UTC, such as 2026-01-31T14:02.`);
}

/** An instant as a `datetime-local` field shows it, in UTC: to the minute, or to the second when it has seconds. */
export function fieldText(at: number): string {
  const iso = new Date(at).toISOString();
  return at % 60_000 === 0 ? iso.slice(0, 16) : iso.slice(0, 19);
}

/** The filter of the page's list: a relative range is open at its end, so that events recorded since are listed too. */
export function listFilter(view: EventView): EventFilter {
  return {
    ...(view.type === undefined ? {} : { type: view.type }),
    ...(view.reason === undefined ? {} : { reason: view.reason }),
    ...(view.clientAddress === undefined ? {} : { clientAddress: view.clientAddress }),
    since: view.since,
    ...(view.range === 'custom' ? { until: view.until } : {}),
  };
}

/** Whether the list is filtered by more than its range. */
export function isFiltered(view: EventView): boolean {
  return view.type !== undefined || view.reason !== undefined || view.clientAddress !== undefined;
}

/** The query string of a view (and a cursor): `?range=1h&type=token.refused`; the default range is left out. */
export function viewQuery(view: EventView, changes: Partial<RawView> & { cursor?: string } = {}): string {
  const params = new URLSearchParams();
  const range = changes.range ?? view.range;
  if (range !== DEFAULT_RANGE) params.set('range', range);
  if (range === 'custom') {
    params.set('from', changes.from ?? view.from);
    params.set('to', changes.to ?? view.to);
  }
  for (const name of ['type', 'reason', 'clientAddress'] as const) {
    const value = name in changes ? changes[name] : view[name];
    if (value !== undefined && value !== '') params.set(name, value);
  }
  if (changes.cursor !== undefined) params.set('cursor', changes.cursor);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** The range in words, to go after "in" or "from": `the last hour`, `2026-01-31 14:02 to 14:05 UTC`. */
export function rangeWords(view: EventView): string {
  if (view.range !== 'custom') return RELATIVE_RANGES[view.range].words;
  return spanText(view.since, view.until);
}

/** `2026-01-31 14:02 to 14:05 UTC` within a day, `2026-01-30 22:00 UTC to 2026-01-31 02:00 UTC` across days. */
export function spanText(since: number, until: number): string {
  const precision = since % 60_000 === 0 && until % 60_000 === 0 ? 'minute' : 'second';
  const start = utcText(since, precision);
  const end = utcText(until, precision);
  return start.slice(0, 10) === end.slice(0, 10) ? `${start.slice(0, -4)} to ${end.slice(11)}` : `${start} to ${end}`;
}

function present(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

/** The events pages' query: each parameter once, but a browser may send any of them twice. */
export type EventsQuery = Record<string, string | string[] | undefined>;

export function single(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new TesseraError('invalid_request', `${name} must be given once.`);
  return value;
}

export function rawViewOf(query: EventsQuery): RawView {
  return {
    range: single(query.range, 'range'),
    from: single(query.from, 'from'),
    to: single(query.to, 'to'),
    type: single(query.type, 'type'),
    reason: single(query.reason, 'reason'),
    clientAddress: single(query.clientAddress, 'clientAddress'),
  };
}

/** The view an event's page was opened from, for its way back; the default view for anything else. */
export function backQuery(query: EventsQuery, now: number): string {
  try {
    return viewQuery(parseEventView(rawViewOf(query), now));
  } catch {
    return '';
  }
}

/** The view the query asks for, or the mistake in what was typed into the form. */
export function viewOrMistake(raw: RawView, now: number): [EventView, undefined] | [undefined, ViewMistake] {
  try {
    return [parseEventView(raw, now), undefined];
  } catch (error) {
    if (error instanceof ViewMistake) return [undefined, error];
    throw error;
  }
}

/** `after` of a live update: the newest event id the page shows, 0 for none. */
export function eventIdOf(raw: string | undefined): number {
  if (raw === undefined || raw === '' || raw === '0') return 0;
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new TesseraError('invalid_request', 'after must be the id of an event this page showed.');
  }
  return Number(raw);
}

/** What the form shows: the view's values, or what was typed when it had a mistake. */
export interface FormState {
  range: string;
  from: string;
  to: string;
  type: string;
  reason: string;
  clientAddress: string;
}

export function stateOf(view: EventView): FormState {
  return {
    range: view.range,
    from: view.from,
    to: view.to,
    type: view.type ?? '',
    reason: view.reason ?? '',
    clientAddress: view.clientAddress ?? '',
  };
}

/** What was typed, as it is shown again beside a mistake: cut short, never a page's worth of it. */
export function typedState(raw: RawView): FormState {
  const typed = (value: string | undefined, max: number) => (value ?? '').trim().slice(0, max);
  return {
    range: typed(raw.range, 10),
    from: typed(raw.from, 40),
    to: typed(raw.to, 40),
    type: typed(raw.type, 40),
    reason: typed(raw.reason, 40),
    clientAddress: typed(raw.clientAddress, MAX_CLIENT_ADDRESS_LENGTH + 10),
  };
}

/** An event's id in its page's address, or undefined for anything that cannot be one. */
export function eventIdParam(eventId: string): number | undefined {
  const id = /^[1-9][0-9]{0,15}$/.test(eventId) ? Number(eventId) : Number.NaN;
  return Number.isSafeInteger(id) ? id : undefined;
}
