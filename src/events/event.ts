import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';
import type { Actor } from '../request-context.js';
import { randomBytes } from 'node:crypto';

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
  // Token requests refused for their keys reached a burst in a minute (`src/apps/attention.ts`):
  // `minute` (ISO 8601), `refused`, `throttled`. At most one per app and hour.
  'app.refusal_burst',
  // The ClientSecret a rotation replaced, ended before its grace period was over; `previousSecretValidUntil`: the end it had.
  'app.previous_secret_ended',
  // Memberships (src/developers/): details name developers by id, never a secret or a link's token.
  'app.owner_changed',
  'app.collaborator_invited',
  'app.collaborator_added',
  'app.collaborator_removed',
  'app.invitation_withdrawn',
  // Credentials (src/credentials/): details name the credential by ClientID and name, never its secret.
  'credential.created',
  'credential.rotated',
  'credential.revoked',
  // As app.previous_secret_ended, for a credential (`clientId`, `name`).
  'credential.previous_secret_ended',
  // A credential's right secret refused for its expiry or its address (`reason`): only a holder of
  // the secret can cause it, so it is kept with the audit events, with no actor.
  'credential.refused',
  // Webhooks (src/webhooks/): `webhookId`, `url`, `eventTypes`; never the secret.
  'webhook.created',
  'webhook.deleted',
  'webhook.secret_rotated',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The types of token traffic: nearly every event, caused by requests. Every other type is a change
 * that people or server code make now and then, whose newest one the stores find at once
 * (`EventStore.lastChanges`).
 */
export type TokenEventType = Extract<EventType, `token.${string}`>;
export type ChangeEventType = Exclude<EventType, TokenEventType>;

/** Small, flat facts about an event (a list only of strings, such as origins): never a secret or a token. */
export type EventDetails = Record<string, string | number | boolean | null | readonly string[]>;

export interface NewAuditEvent {
  type: EventType;
  appId: string;
  /** UNIX ms. */
  at: number;
  /**
   * Who caused it. A refused request (`token.refused`, `token.throttled`) authenticated nobody: it is
   * recorded with the kind of principal it asked to be, which `actorOfEvent` reads as what it attempted.
   */
  principal: Actor | null;
  /** The client's address as the server saw it; null for the CLI. */
  clientAddress: string | null;
  details: EventDetails;
}

/**
 * An event recorded by a request (`EventLog.record`), buffered until written, with an id of its own
 * given when it was recorded: a write tried again after one whose commit is in doubt (the connection
 * lost after the insert was sent) skips the events already stored, so that each is stored once
 * (`EventStore.append`). Events written with their change (`stamp`) have none: their transaction
 * commits or fails with the change, and is never tried again.
 */
export interface KeyedAuditEvent extends NewAuditEvent {
  idempotencyKey: Buffer;
}

/** Random once per process: what tells apart the keys of processes that record at the same instant. */
const PROCESS_KEY_PART = randomBytes(6);
let keysGiven = 0;

/**
 * 16 bytes, unique without a random draw per event: the instant in ms (6 bytes, so that new keys go
 * to the end of the unique index as the ids do, not to random pages of it), this process's random
 * part (6 bytes), and a counter of the keys it gave (4 bytes).
 */
export function newIdempotencyKey(at: number): Buffer {
  const key = Buffer.allocUnsafe(16);
  key.writeUIntBE(Math.max(0, Math.floor(at)) % 2 ** 48, 0, 6);
  PROCESS_KEY_PART.copy(key, 6);
  key.writeUInt32BE(keysGiven, 12);
  keysGiven = (keysGiven + 1) % 2 ** 32;
  return key;
}

/** Who, when and from where: the part of an event known before the change it describes (`EventLog.stamp`). */
export type EventStamp = Pick<NewAuditEvent, 'appId' | 'at' | 'principal' | 'clientAddress'>;

export interface AuditEvent extends NewAuditEvent {
  /** Increases with every event recorded; the cursor of `GET /api/apps/{appId}/events`. */
  id: number;
}

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** The types of refused requests: whoever sent one is unknown, whatever it asked for. */
const REFUSED_REQUEST_TYPES: ReadonlySet<EventType> = new Set(['token.refused', 'token.throttled']);

/** Who caused an event, and what a refused request attempted. */
export interface EventActor {
  /** Who caused it; null when unknown: a refused request (its client address is all that is known). */
  principal: Actor | null;
  /**
   * What a refused request asked to be: `admin` (a ClientID and ClientSecret) or `anonymous` (the
   * AppID and AppKey); null for a bad token, and for every event that is not a refusal.
   */
  attempted: PrincipalKind | null;
}

/**
 * Who caused an event of `type` recorded with `principal`, and what it attempted. A refused request
 * is recorded (and counted) with the kind of principal it asked to be, but nobody was authenticated:
 * a wrong ClientSecret is not the admin's doing, so its actor is unknown, and the kind is what it
 * attempted. Every reader of events and counts (the API, the CLI, the portal) goes through this.
 */
export function actorOfEvent(type: EventType, principal: Actor | null): EventActor {
  if (!REFUSED_REQUEST_TYPES.has(type)) return { principal, attempted: null };
  return { principal: null, attempted: principal === 'admin' || principal === 'anonymous' ? principal : null };
}

export function describeEvent(event: AuditEvent) {
  const { principal, attempted } = actorOfEvent(event.type, event.principal);
  return {
    id: String(event.id),
    type: event.type,
    at: new Date(event.at).toISOString(),
    appId: event.appId,
    principal,
    attempted,
    clientAddress: event.clientAddress,
    details: event.details,
  };
}
