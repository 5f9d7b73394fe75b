import type { EventDetails, NewAuditEvent } from '../events/event.js';

/**
 * What a developer's account log records (`developer_events`), apart from the apps' audit log
 * (`src/events/`): an account belongs to no app. Details never hold a password, a hash or a token;
 * links are named by their public id.
 */
export const DEVELOPER_EVENT_TYPES = [
  // An app the developer was a member of was deleted (its own log went with it): one for each member.
  'developer.app_deleted',
  'developer.created',
  'developer.disabled',
  // A limit refused the developer a new app or an invitation (developer-limits.ts): at most one of each limit an hour.
  'developer.limit_reached',
  'developer.link_issued',
  'developer.password_set',
  'developer.signed_in',
  'developer.signed_out',
] as const;

export type DeveloperEventType = (typeof DEVELOPER_EVENT_TYPES)[number];

/**
 * Who caused an account event: the operator (the CLI), or a developer (the portal): the account's
 * own, or the one who deleted an app the account was a member of (the event's `byDeveloperId`).
 */
export type DeveloperActor = 'operator' | 'developer';

export interface NewDeveloperEvent {
  type: DeveloperEventType;
  developerId: string;
  /** UNIX ms. */
  at: number;
  actor: DeveloperActor;
  /** The client's address as the server saw it; null for the CLI. */
  clientAddress: string | null;
  details: EventDetails;
}

export interface DeveloperEvent extends NewDeveloperEvent {
  /** Increases with every event written. */
  id: number;
}

/**
 * Each developer keeps at most this many account events, the newest: a developer can cause any
 * number of sign-ins. Older ones also go after EVENTS_RETENTION_DAYS.
 */
export const MAX_EVENTS_PER_DEVELOPER = 1000;

/** The events of an account change: of the developer's account log, of an app's audit log, or both. */
export interface AccountAudit {
  developer?: NewDeveloperEvent[];
  app?: NewAuditEvent[];
}

export function describeDeveloperEvent(event: DeveloperEvent) {
  return {
    id: String(event.id),
    type: event.type,
    at: new Date(event.at).toISOString(),
    developerId: event.developerId,
    actor: event.actor,
    clientAddress: event.clientAddress,
    details: event.details,
  };
}
