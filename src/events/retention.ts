import type { Actor } from '../request-context.js';
import type { EventType } from './event.js';

/**
 * The two classes of stored events, each trimmed to its own cap, so that one cannot push the other
 * out (docs/decisions.md, "Audit events"):
 * - `audit`: what only a holder of a secret (an admin token, the ClientSecret, the CLI) can cause;
 *   `EVENTS_MAX_PER_APP`.
 * - `refusal`: refused attempts, which anyone who knows an AppID can cause; `EVENTS_MAX_REFUSALS_PER_APP`.
 */
export type EventClass = 'audit' | 'refusal';

/** What `EventLog.record` does with an event: store it as a row of a class, or only count it. */
export type EventRetention = EventClass | 'counted';

/**
 * The type of the `refusal` class's rows. The stores tell the classes of rows apart by type alone
 * (`type = 'token.refused'`, with a partial index for each class), so no column has to be kept in
 * step with this function.
 */
export const REFUSAL_TYPE: EventType = 'token.refused';

/**
 * How an event recorded by a request is kept. Every event recorded through `EventLog.record` is
 * counted as well; this says whether it is also a row, and of which class:
 * - an anonymous token issued, or revoked by itself (RFC 7009 with its own token): counted only;
 *   anyone with the public AppID can cause any number of them;
 * - an admin attempt refused by the limits on failed admin attempts (`token.throttled`): counted
 *   only, whoever sent it; past those limits, anyone can cause any number of them, and as rows they
 *   would grow storage and push refusals out;
 * - a refusal (a wrong ClientID, ClientSecret or AppKey, a bad bearer token): a `refusal` row;
 * - everything else (an admin token issued, a revocation by an admin, a developer or the operator,
 *   a change of an app's owner or collaborators, the ClientSecret sent from a browser,
 *   `app.secret_exposed`, which needs the secret): `audit`.
 * Events that a store method writes with the change they describe (`EventLog.stamp`) are `audit`
 * rows, and not counted.
 */
export function retentionOf(type: EventType, principal: Actor | null): EventRetention {
  if (type === REFUSAL_TYPE) return 'refusal';
  if (type === 'token.throttled') return 'counted';
  if (type === 'token.issued' && principal === 'anonymous') return 'counted';
  if (type === 'token.revoked' && principal !== 'admin' && principal !== 'operator' && principal !== 'developer') return 'counted';
  return 'audit';
}

/** The class of a stored row: the rule the stores apply in SQL. */
export function classOfRow(type: EventType): EventClass {
  return type === REFUSAL_TYPE ? 'refusal' : 'audit';
}
