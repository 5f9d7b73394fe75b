import type { Actor } from '../request-context.js';

/** What the audit log records. */
export const EVENT_TYPES = [
  'token.issued',
  'token.revoked',
  'token.refused',
  // An admin attempt refused (429) by the limits on failed admin attempts; `reason`: `address` or
  // `app`, the limit. Only counted, never a row (`retentionOf`).
  'token.throttled',
  'app.secret_rotated',
  'app.configuration_changed',
  'app.secret_exposed',
  // Memberships (src/developers/): details name developers by id, never a secret or a link's token.
  'app.owner_changed',
  'app.collaborator_invited',
  'app.collaborator_added',
  'app.collaborator_removed',
  'app.invitation_withdrawn',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Small, flat facts about an event (a list only of strings, such as origins): never a secret or a token. */
export type EventDetails = Record<string, string | number | boolean | null | readonly string[]>;

export interface NewAuditEvent {
  type: EventType;
  appId: string;
  /** UNIX ms. */
  at: number;
  principal: Actor | null;
  /** The client's address as the server saw it; null for the CLI. */
  clientAddress: string | null;
  details: EventDetails;
}

/** Who, when and from where: the part of an event known before the change it describes (`EventLog.stamp`). */
export type EventStamp = Pick<NewAuditEvent, 'appId' | 'at' | 'principal' | 'clientAddress'>;

/**
 * The audit events of a change, built from its result (e.g. how many tokens it removed). A store
 * method taking one writes them in the change's own transaction: both are written, or neither.
 */
export type AuditOf<Result> = (result: Result) => NewAuditEvent[];

export interface AuditEvent extends NewAuditEvent {
  /** Increases with every event recorded; the cursor of `GET /api/apps/{appId}/events`. */
  id: number;
}

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

export function describeEvent(event: AuditEvent) {
  return {
    id: String(event.id),
    type: event.type,
    at: new Date(event.at).toISOString(),
    appId: event.appId,
    principal: event.principal,
    clientAddress: event.clientAddress,
    details: event.details,
  };
}
