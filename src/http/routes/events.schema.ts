import { Type } from 'typebox';
import { EXPORT_FORMATS } from '../../events/export.js';
import { EVENT_TYPES } from '../../events/event.js';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import {
  answer,
  APP_NOT_FOUND,
  AppParams,
  EventCounts,
  EventPage,
  problem,
  Ref,
  UNAUTHENTICATED,
  UNAVAILABLE,
  adminFeature,
} from '../schemas.js';

/**
 * The app's audit events and their counts: the schema of each route of `events.ts`, from which
 * Fastify validates its requests, serializes its answers and types its handlers, and from which
 * docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and answered by
 * `../errors.ts`.
 */

/** The app's reads of events and counts, at most 4 at once. */
const EVENT_READS_BUSY = problem(
  'The app has 4 reads of its events or counts under way already (a filtered read, a chart): try again when they are answered. Possible codes: TOO_MANY_REQUESTS.',
  { 'Retry-After': { description: 'Seconds to wait: 1.', type: 'integer' } },
);

/** GET /api/apps/{appId}/events */
export const listEvents = {
  tags: ['events'],
  operationId: 'listEvents',
  summary: "The app's audit events, newest first (admin feature)",
  description:
    "Rows of two classes, each kept on its own: audit events (admin tokens issued, revocations by an admin or the operator, secret rotations, configuration changes), at most `EVENTS_MAX_PER_APP` per app (default 100000), and refusals (`token.refused`), at most `EVENTS_MAX_REFUSALS_PER_APP` per app (default 10000), so that refused attempts, which need no secret, never push an audit event out; both for `EVENTS_RETENTION_DAYS` (default 30). Anonymous tokens issued, and revoked by themselves, and admin attempts throttled by the failed-admin limits (`token.throttled`) are not rows: see `/events/counts` (`?type=` of such a type answers the rows there are, none for `token.throttled`). Events are recorded asynchronously (one may appear a moment after its operation). Filters (`type`, `since`, `until`, `reason`, `clientAddress`) are combined, and pages (`cursor`) keep them: pass the same ones with each cursor. A filter that matches few of the app's rows reads all of them, which the caps above bound. A repeated query parameter is an error; an empty one counts as absent. A read with a filter (type, range, reason, address) examines at most 20,000 of the app's events a request, 2,000 at a time, taking turns with every other request of the service: a page may then hold fewer events than `limit`, even none, with a `nextCursor` that reads on from where it stopped. `nextCursor` null: the log is read to its end.",
  security: [{ bearer: [] }],
  params: AppParams,
  // Query values are checked here for their form, and by the events' own parsers (shared with the
  // CLI) for the rest: a date-time, a cursor given out, a limit up to 500. An empty one counts as absent.
  querystring: Type.Object({
    type: Type.Optional(
      Type.String({
        enum: ['', ...EVENT_TYPES],
        'x-field-name': 'event type',
        description: 'Only events of this type (components/schemas/EventType).',
      }),
    ),
    since: Type.Optional(
      Type.String({
        description:
          'Only events recorded at or after this RFC 3339 date-time (`2026-01-31T14:02:00Z`, milliseconds at most), as `/events/counts` takes it.',
        examples: ['2026-01-31T14:02:00Z'],
      }),
    ),
    until: Type.Optional(
      Type.String({
        description: 'Only events recorded before this RFC 3339 date-time (exclusive). With `since`: after it, and at most 90 days later.',
        examples: ['2026-02-01T00:00:00Z'],
      }),
    ),
    reason: Type.Optional(
      Type.String({
        pattern: '^([a-z_]{1,40})?$',
        description:
          "Only events whose `details.reason` is this: `invalid_client` (a wrong ClientID, ClientSecret or AppKey), `invalid_token` (a bad bearer token), `credential_expired`, `address_not_allowed` (a credential's right secret refused).",
      }),
    ),
    clientAddress: Type.Optional(
      Type.String({
        maxLength: 45,
        description: 'Only events from this client address (IPv4 or IPv6), exactly as events give it in `clientAddress`.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ pattern: '^([1-9][0-9]{0,15})?$', description: "The previous page's `nextCursor`: the page of older events." }),
    ),
    limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2})?$', description: 'Events per page: 1 to 500; 50 when absent.' })),
    format: Type.Optional(
      Type.String({
        enum: ['', ...EXPORT_FORMATS],
        'x-field-name': 'export format',
        description:
          "Every event the filters keep, newest first, streamed as one download instead of a page: `jsonl` (JSON Lines, `application/jsonl`: one event a line, as a page gives it) or `csv` (`text/csv`: a header row, then `id,at,type,principal,attempted,clientAddress,details`, the details as JSON; a cell a spreadsheet would take for a formula starts with `'`). `Accept: application/jsonl` (or `application/x-ndjson`) or `text/csv` asks for the same. Not with `cursor` or `limit`.",
      }),
    ),
  }),
  response: {
    200: {
      description: 'One page of events; with `format` (or `Accept`), every event the filters keep, streamed.',
      content: {
        'application/json': { schema: Ref(EventPage) },
        'application/jsonl': { schema: Type.String({ description: 'One event a line.' }) },
        'text/csv': { schema: Type.String({ description: 'A header row, then one event a row.' }) },
      },
    },
  },
  errors: {
    400: problem(
      'An unknown `type` or `format`, `format` with `cursor` or `limit`, a `cursor` this service did not give out, `limit` out of range, `since` or `until` not an RFC 3339 date-time, `since` not before `until` or more than 90 days before it, a `reason` not of `[a-z_]{1,40}`, a `clientAddress` that is not an IP address, or a repeated parameter: the message names the parameter. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('events:read'),
    404: APP_NOT_FOUND,
    429: EVENT_READS_BUSY,
    503: UNAVAILABLE,
  },
};

/** POST /api/apps/{appId}/events */
export const eventsOtherMethods = otherMethodsSchema(
  'events',
  'eventsOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/events */
export const preflightEvents = preflightSchema({ operationId: 'preflightEvents' });

/** GET /api/apps/{appId}/events/counts */
export const countEvents = {
  tags: ['events'],
  operationId: 'countEvents',
  summary: 'How many events of each kind the app had, per minute, hour or day (admin feature)',
  description:
    "Every event of a request is counted per app and UTC minute, by type, principal (or what a refused request attempted) and reason: tokens issued (anonymous ones only so), refused and revoked, and admin attempts refused with `429` by the limits on failed admin attempts (only so: `token.throttled`, attempted `admin`, reason `address` for the limit per app and client address, `app` for the app's ceiling; so that a guess at a ClientSecret shows at its full size: its `401`s as `token.refused` plus its `429`s as `token.throttled`); not the changes written with their event (secret rotations, configuration changes, revoke-all). Counts are kept for `EVENTS_RETENTION_DAYS`. The buckets start from `since`, moved back to the start of its minute, hour or day (UTC), up to before `until`; at most 1440 buckets. Counts are written with the events, within 20 ms; an instance killed with `kill -9` loses the counts of its last 20 ms. A repeated query parameter is an error; an empty one counts as absent.",
  security: [{ bearer: [] }],
  params: AppParams,
  querystring: Type.Object({
    per: Type.Optional(
      Type.String({
        enum: ['', 'minute', 'hour', 'day'],
        'x-field-name': 'period',
        description: 'The length of a bucket: `minute`, `hour` (when absent) or `day`.',
      }),
    ),
    since: Type.Optional(
      Type.String({
        description:
          'RFC 3339 date-time (`2026-01-31T12:00:00Z`, milliseconds at most). Default: an hour (per minute), a day (per hour) or 30 days (per day) before `until`.',
        examples: ['2026-01-31T12:00:00Z'],
      }),
    ),
    until: Type.Optional(Type.String({ description: 'RFC 3339 date-time, exclusive. Default: now.', examples: ['2026-02-01T12:00:00Z'] })),
  }),
  response: { 200: answer(Ref(EventCounts), 'The counts of the span, with totals.') },
  errors: {
    400: problem(
      'An unknown `per`, a `since` or `until` that is not an RFC 3339 date-time after 1970, `since` not before `until`, more than 1440 buckets, or a repeated parameter. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('events:read'),
    404: APP_NOT_FOUND,
    429: EVENT_READS_BUSY,
    503: UNAVAILABLE,
  },
};

/** POST /api/apps/{appId}/events/counts */
export const eventCountsOtherMethods = otherMethodsSchema(
  'events',
  'eventCountsOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/events/counts */
export const preflightEventCounts = preflightSchema({ operationId: 'preflightEventCounts' });
