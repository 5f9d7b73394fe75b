import { TesseraError } from '../errors.js';
import { quoted } from '../text.js';
import { EVENT_TYPES, isEventType, type EventType } from './event.js';

export const DEFAULT_EVENT_PAGE = 50;
export const MAX_EVENT_PAGE = 500;

/** A page of an app's audit log, newest first. */
export interface EventPageQuery {
  type?: EventType;
  /** Only events older than this id: the previous page's `nextCursor`. */
  beforeId?: number;
  /** 1 to `MAX_EVENT_PAGE`. */
  limit: number;
}

/**
 * A page query from its text form (`GET …/events?type=&cursor=&limit=`, `tessera events --type
 * --limit`); an absent or empty value is left out. `invalid_request` for anything else.
 */
export function parseEventPageQuery(
  raw: { type?: string | undefined; cursor?: string | undefined; limit?: string | undefined },
  defaultLimit = DEFAULT_EVENT_PAGE,
): EventPageQuery {
  const query: EventPageQuery = { limit: defaultLimit };
  if (present(raw.type)) {
    if (!isEventType(raw.type)) {
      throw new TesseraError('invalid_request', `Unknown event type ${quoted(raw.type)}; the types are: ${EVENT_TYPES.join(', ')}.`);
    }
    query.type = raw.type;
  }
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

function present(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}
