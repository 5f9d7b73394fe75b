import { fieldMistakeOf, FormMistake, type FieldMistake } from '../common/mistakes.js';
import { MAX_WEBHOOK_URL_LENGTH } from '../../../webhooks/destination.js';
import type { NewWebhookFields } from '../../../webhooks/service.js';
import { WEBHOOK_EVENT_TYPES } from '../../../webhooks/webhook.js';

// The webhooks pages' forms, read from what the browser sent: the new-webhook form as typed (kept
// to show again beside a mistake) and as `WebhookService.create` takes it, a refusal in the form's
// words, and the ids in the pages' addresses.

/** The new-webhook form's fields, as typed: the URL, and the types whose boxes are ticked. */
export interface WebhookForm {
  url: string;
  eventTypes: string[];
}

/** The form as it opens: every type ticked, what a webhook gets when it names none. */
export const EMPTY_FORM: WebhookForm = { url: '', eventTypes: [...WEBHOOK_EVENT_TYPES] };

export type Field = 'url' | 'eventTypes';
const FIELD_WORDS: Record<Field, string> = { url: 'The URL', eventTypes: 'The list of event types' };

export type Mistake = FieldMistake<Field>;

/** The new-webhook form as typed, each field cut short where nothing longer could be right. */
export function webhookFormOf(body: URLSearchParams): WebhookForm {
  return {
    url: (body.get('url') ?? '').slice(0, MAX_WEBHOOK_URL_LENGTH + 1).trim(),
    eventTypes: body
      .getAll('eventType')
      .slice(0, WEBHOOK_EVENT_TYPES.length * 2)
      .map((type) => type.slice(0, 64)),
  };
}

/**
 * The new webhook's fields, as `WebhookService.create` takes them. No box ticked is a mistake here,
 * though the API takes an empty list as every type: a person who unticks them all means none.
 */
export function webhookFields(form: WebhookForm): NewWebhookFields {
  if (form.eventTypes.length === 0) {
    throw new FormMistake('eventTypes', 'Choose at least one type of event to send: tick its box.');
  }
  return { url: form.url, eventTypes: form.eventTypes };
}

/**
 * The status and the words of a refusal the new-webhook form is shown again with, by the error's
 * code: `invalid_request` (the field it names, in the form's words: the service's message starts
 * with the API's name of it, `url must be…`), `CONFLICT` (as many webhooks as an app may have),
 * `SERVICE_UNAVAILABLE` (no KEY_ENCRYPTION_KEY to keep the secret with). Anything else is thrown on.
 */
export function mistakeOf(error: unknown): [number, Mistake] {
  return fieldMistakeOf(error, FIELD_WORDS, ['CONFLICT', 'SERVICE_UNAVAILABLE']);
}

/** A webhook's id in an address (`wh_` and 22 characters); anything else names none. */
export const WEBHOOK_ID = /^wh_[A-Za-z0-9_-]{22}$/;

/** A delivery's id in an address or a cursor: a positive integer, as the stores number them. */
export function deliveryIdOf(text: unknown): number | undefined {
  if (typeof text !== 'string' || !/^[1-9][0-9]{0,15}$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : undefined;
}
