import { isIP } from 'node:net';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { listByPrefix, quoted } from 'tessera-tokens/internal/text.js';
import { parseInstant } from './counts.js';
import { EVENT_TYPES, isEventType, type EventType } from './event.js';

export const DEFAULT_EVENT_PAGE = 50;
export const MAX_EVENT_PAGE = 500;

/** The longest span between `since` and `until` a query of events may ask for: 90 days. */
export const MAX_EVENT_SPAN_MS = 90 * 86_400_000;
/** The longest client address: an IPv6 address with an IPv4 tail (`ffff:…:255.255.255.255`). */
export const MAX_CLIENT_ADDRESS_LENGTH = 45;
/** A `details.reason`, as the service writes them: `invalid_client`, `credential_expired`. */
export const REASON_PATTERN = /^[a-z_]{1,40}$/;

/** Which events: every condition given must hold. */
export interface EventFilter {
  type?: EventType;
  /** UNIX ms: only events recorded at or after it. */
  since?: number;
  /** UNIX ms, exclusive: only events recorded before it. */
  until?: number;
  /** Only events whose `details.reason` is this (refusals and throttles: `invalid_client`, `invalid_token`, …). */
  reason?: string;
  /** Only events from this client address, exactly as recorded. */
  clientAddress?: string;
}

/** A page of an app's audit log, newest first. */
export interface EventPageQuery extends EventFilter {
  /** Only events older than this id: the previous page's `nextCursor`. */
  beforeId?: number;
  /** 1 to `MAX_EVENT_PAGE`. */
  limit: number;
}

/** The text form of a page query, as the API and the portal are sent it. */
export interface RawEventPageQuery {
  type?: string | undefined;
  cursor?: string | undefined;
  limit?: string | undefined;
  /** RFC 3339 date-times. */
  since?: string | undefined;
  until?: string | undefined;
  reason?: string | undefined;
  clientAddress?: string | undefined;
}

/**
 * A page query from its text form (`GET …/events?type=&cursor=&limit=&since=&until=&reason=&clientAddress=`,
 * `tessera events --type --limit`); an absent or empty value is left out. `invalid_request`, naming
 * the parameter, for anything else.
 */
export function parseEventPageQuery(raw: RawEventPageQuery, defaultLimit = DEFAULT_EVENT_PAGE): EventPageQuery {
  const query: EventPageQuery = { limit: defaultLimit, ...parseEventFilter(raw) };
  if (present(raw.limit)) {
    const limit = /^[0-9]{1,4}$/.test(raw.limit) ? Number(raw.limit) : 0;
    if (limit < 1 || limit > MAX_EVENT_PAGE)
      throw new TesseraError('invalid_request', `limit must be a whole number from 1 to ${MAX_EVENT_PAGE}.`);
    query.limit = limit;
  }
  if (present(raw.cursor)) {
    if (!/^[1-9][0-9]{0,15}$/.test(raw.cursor) || !Number.isSafeInteger(Number(raw.cursor))) {
      throw new TesseraError('invalid_request', 'cursor is not one this service gave out.');
    }
    query.beforeId = Number(raw.cursor);
  }
  return query;
}

/** The filter of a page query's text form (its type, range, reason and client address), checked. */
export function parseEventFilter(raw: Omit<RawEventPageQuery, 'cursor' | 'limit'>): EventFilter {
  const filter: EventFilter = {};
  if (present(raw.type)) {
    if (!isEventType(raw.type)) {
      throw new TesseraError('invalid_request', `Unknown event type ${quoted(raw.type)}; the types are ${listByPrefix(EVENT_TYPES)}.`);
    }
    filter.type = raw.type;
  }
  const since = parseInstant(raw.since, 'since');
  const until = parseInstant(raw.until, 'until');
  checkEventSpan(since, until);
  if (since !== undefined) filter.since = since;
  if (until !== undefined) filter.until = until;
  if (present(raw.reason)) filter.reason = checkedReason(raw.reason);
  if (present(raw.clientAddress)) filter.clientAddress = checkedClientAddress(raw.clientAddress);
  return filter;
}

/** `since` before `until`, at most `MAX_EVENT_SPAN_MS` apart; either may be open. */
export function checkEventSpan(since: number | undefined, until: number | undefined): void {
  if (since === undefined || until === undefined) return;
  if (since >= until) throw new TesseraError('invalid_request', 'since must be before until.');
  if (until - since > MAX_EVENT_SPAN_MS) {
    throw new TesseraError('invalid_request', `since and until must be at most ${MAX_EVENT_SPAN_MS / 86_400_000} days apart.`);
  }
}

export function checkedReason(reason: string): string {
  if (!REASON_PATTERN.test(reason)) {
    throw new TesseraError('invalid_request', 'reason must be 1 to 40 lower-case letters and underscores, such as invalid_client.');
  }
  return reason;
}

/** An IPv4 or IPv6 address, as a client address is recorded. */
export function isClientAddress(address: string): boolean {
  return address.length <= MAX_CLIENT_ADDRESS_LENGTH && isIP(address) !== 0;
}

export function checkedClientAddress(address: string): string {
  if (!isClientAddress(address)) {
    throw new TesseraError('invalid_request', 'clientAddress must be an IPv4 or IPv6 address, such as 203.0.113.7 or 2001:db8::1.');
  }
  return address;
}

function present(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}
