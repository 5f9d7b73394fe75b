import { randomBytes } from 'node:crypto';
import { EVENT_TYPES, type ChangeEventType, type EventType } from '../events/event.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { Actor } from '../request-context.js';
import type { EventDetails } from '../events/event.js';

/**
 * What a webhook may be sent: every type but token traffic (`token.*`, thousands a minute; the
 * export and the counts are for those). The alerts (a leaked secret, a burst of refusals, a
 * credential refused) and every change to the app are among them, and are what a webhook gets when
 * it names no types.
 */
export type WebhookEventType = ChangeEventType;

export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = EVENT_TYPES.filter(
  (type): type is WebhookEventType => !type.startsWith('token.'),
);

/** At most this many webhooks per app: each event is sent to each, so the deliveries an event makes are bounded. */
export const MAX_WEBHOOKS_PER_APP = 10;

/**
 * At most this many deliveries of a webhook wait to be sent; past it, the oldest waiting are marked
 * failed (`queue full`), so that a receiver down for days holds a bounded queue. The deliveries kept
 * for the portal's list (sent or failed) are bounded too: `MAX_DELIVERIES_KEPT` each, for at most
 * `DELIVERIES_KEPT_MS`.
 */
export const MAX_PENDING_DELIVERIES = 1_000;
export const MAX_DELIVERIES_KEPT = 1_000;
export const DELIVERIES_KEPT_MS = 30 * 24 * 3_600_000;

/** How long the previous secret still signs after a rotation: receivers have this long to take the new one. */
export const PREVIOUS_SECRET_SIGNS_MS = 24 * 3_600_000;

export interface WebhookRecord {
  /** `wh_` and 22 random characters: public, names the webhook in the API. */
  id: string;
  appId: string;
  url: string;
  eventTypes: WebhookEventType[];
  /** The `whsec_` secret, encrypted (`WebhookSecrets`). */
  secret: Buffer;
  /** During a rotation, the secret it replaced (encrypted), still signing until `previousSecretUntil`. */
  previousSecret: Buffer | null;
  previousSecretUntil: number | null;
  createdAt: number;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One event to send to one webhook, with a copy of the event and how its attempts went. */
export interface DeliveryRecord {
  id: number;
  webhookId: string;
  appId: string;
  event: {
    id: number;
    type: EventType;
    at: number;
    principal: Actor | null;
    clientAddress: string | null;
    details: EventDetails;
  };
  state: DeliveryState;
  attempts: number;
  /** UNIX ms: when it is next tried (pending), or was last taken. */
  nextAttemptAt: number;
  createdAt: number;
  lastAttemptAt: number | null;
  /** The receiver's status code of the last attempt; null when it gave none (refused, timed out). */
  lastStatus: number | null;
  /** Why the last attempt failed, in words; null when it succeeded or none was made. */
  lastError: string | null;
  /** The start of the receiver's answer to the last attempt (`MAX_RESPONSE_EXCERPT` characters). */
  lastResponse: string | null;
}

/** The first characters of a receiver's answer kept with a delivery. */
export const MAX_RESPONSE_EXCERPT = 256;

export function newWebhookId(): string {
  return `wh_${randomBytes(16).toString('base64url').slice(0, 22)}`;
}

/** The event types asked for, checked: none (or absent) means every type a webhook may be sent. */
export function parseWebhookEventTypes(value: unknown): WebhookEventType[] {
  if (value === undefined || value === null) return [...WEBHOOK_EVENT_TYPES];
  if (!Array.isArray(value) || value.length > WEBHOOK_EVENT_TYPES.length) {
    throw invalidTypes(`eventTypes must be a list of at most ${WEBHOOK_EVENT_TYPES.length} event types.`);
  }
  if (value.length === 0) return [...WEBHOOK_EVENT_TYPES];
  const chosen = new Set<WebhookEventType>();
  for (const type of value) {
    if (typeof type !== 'string' || !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type)) {
      const text = typeof type === 'string' ? JSON.stringify(type.slice(0, 64)) : 'a value that is not a string';
      throw invalidTypes(
        `eventTypes has ${text}, which is not a type a webhook is sent: ${WEBHOOK_EVENT_TYPES.join(', ')} (token traffic is not sent; export it instead).`,
      );
    }
    chosen.add(type as WebhookEventType);
  }
  // In the catalogue's order, whatever the order asked.
  return WEBHOOK_EVENT_TYPES.filter((type) => chosen.has(type));
}

function invalidTypes(message: string): TesseraError {
  return new TesseraError('invalid_request', message, { field: 'eventTypes' });
}

/** A webhook as the API, the CLI and the portal describe it: never its secret. */
export function describeWebhook(record: WebhookRecord) {
  return {
    id: record.id,
    appId: record.appId,
    url: record.url,
    eventTypes: record.eventTypes,
    createdAt: new Date(record.createdAt).toISOString(),
    previousSecretUntil: record.previousSecretUntil === null ? null : new Date(record.previousSecretUntil).toISOString(),
  };
}

export type WebhookDescription = ReturnType<typeof describeWebhook>;

export function describeDelivery(record: DeliveryRecord) {
  return {
    id: String(record.id),
    webhookId: record.webhookId,
    eventId: String(record.event.id),
    eventType: record.event.type,
    state: record.state,
    attempts: record.attempts,
    createdAt: new Date(record.createdAt).toISOString(),
    lastAttemptAt: record.lastAttemptAt === null ? null : new Date(record.lastAttemptAt).toISOString(),
    nextAttemptAt: record.state === 'pending' ? new Date(record.nextAttemptAt).toISOString() : null,
    lastStatus: record.lastStatus,
    lastError: record.lastError,
    lastResponse: record.lastResponse,
  };
}

export type DeliveryDescription = ReturnType<typeof describeDelivery>;
