import { Type } from 'typebox';
import { MAX_WEBHOOK_URL_LENGTH } from '../../webhooks/destination.js';
import { MAX_DELIVERY_PAGE } from '../../webhooks/service.js';
import { MAX_RESPONSE_EXCERPT, MAX_WEBHOOKS_PER_APP, WEBHOOK_EVENT_TYPES } from '../../webhooks/webhook.js';
import { adminFeature, answer, APP_NOT_FOUND, AppId, AppParams, NO_STORE, problem, UNAUTHENTICATED, UNAVAILABLE } from '../schemas.js';

/**
 * An app's webhooks (docs/webhooks.md): the schema of each route of `webhooks.ts`, from which
 * Fastify validates its requests, serializes its answers and types its handlers, and from which
 * docs/openapi.json is generated. Its errors are answered by `../errors.ts`.
 */

const MANAGE =
  "An admin feature: an admin token of the app's own ClientID, or one with `webhooks:manage`. The operator manages them with `tessera webhooks`, the app's owner in the portal.";

const EventTypes = Type.Array(Type.String({ enum: [...WEBHOOK_EVENT_TYPES] }), {
  maxItems: WEBHOOK_EVENT_TYPES.length,
  description: 'The audit event types sent to it. Token traffic (`token.*`) is never sent: export it instead.',
});

const Webhook = Type.Object(
  {
    id: Type.String({ description: '`wh_` and 22 characters.' }),
    appId: Type.String(),
    url: Type.String(),
    eventTypes: EventTypes,
    createdAt: Type.String({ format: 'date-time' }),
    previousSecretUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'After a rotation: until when the previous secret still signs beside the new one; null otherwise.',
    }),
  },
  { additionalProperties: false },
);

const WebhookWithSecret = Type.Object(
  {
    webhook: Webhook,
    secret: Type.String({
      description:
        'The signing secret (`whsec_` and base64), as the Standard Webhooks libraries take it: in this answer only. It is stored encrypted.',
    }),
  },
  { additionalProperties: false },
);

const Delivery = Type.Object(
  {
    id: Type.String(),
    webhookId: Type.String(),
    eventId: Type.String({ description: "The event's id: the CloudEvent's `id`; `webhook-id` is `msg_` and it." }),
    eventType: Type.String(),
    state: Type.String({ enum: ['pending', 'delivered', 'failed'] }),
    attempts: Type.Integer({ description: 'Attempts made (in this round: sending it again starts from 0).' }),
    createdAt: Type.String({ format: 'date-time' }),
    lastAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When it is tried next (pending only).',
    }),
    lastStatus: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's status code at the last attempt; null when none came.",
    }),
    lastError: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed; null if it succeeded.' }),
    lastResponse: Type.Union([Type.String({ maxLength: MAX_RESPONSE_EXCERPT }), Type.Null()], {
      description: `The first ${MAX_RESPONSE_EXCERPT} bytes of the receiver's answer.`,
    }),
  },
  { additionalProperties: false },
);

const WebhookParams = Type.Object({ appId: AppId, webhookId: Type.String({ maxLength: 64 }) });
const DeliveryParams = Type.Object({
  appId: AppId,
  webhookId: Type.String({ maxLength: 64 }),
  deliveryId: Type.String({ pattern: '^[0-9]{1,15}$' }),
});

const NOT_FOUND_WEBHOOK = problem('No app has this AppID, or the app has no webhook of this id. Possible codes: APP_NOT_FOUND, NOT_FOUND.');
const MANAGE_FEATURE = adminFeature('webhooks:manage');

/** GET /api/apps/{appId}/webhooks */
export const listWebhooks = {
  tags: ['webhooks'],
  operationId: 'listWebhooks',
  summary: "The app's webhooks (admin feature)",
  description: `${MANAGE} Oldest first; never a secret.`,
  security: [{ bearer: [] }],
  params: AppParams,
  response: {
    200: answer(
      Type.Object({ webhooks: Type.Array(Webhook, { maxItems: MAX_WEBHOOKS_PER_APP }) }, { additionalProperties: false }),
      'The webhooks.',
      NO_STORE,
    ),
  },
  errors: { 401: UNAUTHENTICATED, 403: MANAGE_FEATURE, 404: APP_NOT_FOUND, 503: UNAVAILABLE },
};

/** POST /api/apps/{appId}/webhooks */
export const createWebhook = {
  tags: ['webhooks'],
  operationId: 'createWebhook',
  summary: 'Add a webhook (admin feature)',
  description: `${MANAGE} The app's audit events of \`eventTypes\` (all but token traffic when left out or empty) are POSTed to \`url\` as CloudEvents 1.0 (JSON, structured mode), signed as the Standard Webhooks specification says, at least once: a receiver drops duplicates by \`webhook-id\`. The URL must be https (http when the operator sets WEBHOOK_ALLOW_HTTP=1), and its host resolve to public addresses only (unless WEBHOOK_ALLOW_PRIVATE=1): checked now and at each delivery. At most ${MAX_WEBHOOKS_PER_APP} per app. Recorded as a \`webhook.created\` event.`,
  security: [{ bearer: [] }],
  params: AppParams,
  body: Type.Object(
    {
      url: Type.String({ maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'Where to send the events: an absolute https URL.' }),
      eventTypes: Type.Optional(EventTypes),
    },
    { additionalProperties: false },
  ),
  response: { 201: answer(WebhookWithSecret, 'Added. The secret is in this answer only.', NO_STORE) },
  errors: {
    400: problem(
      "Malformed JSON, a URL that is not absolute, not https, too long, with a user name, or whose host does not resolve or resolves to an address that is not public; an unknown event type: the message starts with the field's name (`url`, `eventTypes`). Possible codes: invalid_request.",
    ),
    401: UNAUTHENTICATED,
    403: MANAGE_FEATURE,
    404: APP_NOT_FOUND,
    409: problem(
      `The app has ${MAX_WEBHOOKS_PER_APP} webhooks already; or, during a rolling upgrade, an older release still serves (docs/deployment.md, "Upgrading"). Possible codes: CONFLICT.`,
    ),
    413: problem('The body is over 8192 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not `application/json`. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: problem(
      'The database cannot be reached, or the operator has not set KEY_ENCRYPTION_KEY, which the secrets are encrypted with. Code: SERVICE_UNAVAILABLE.',
    ),
  },
};

/** GET /api/apps/{appId}/webhooks/{webhookId} */
export const getWebhook = {
  tags: ['webhooks'],
  operationId: 'getWebhook',
  summary: 'A webhook (admin feature)',
  description: `${MANAGE} Never its secret.`,
  security: [{ bearer: [] }],
  params: WebhookParams,
  response: { 200: answer(Webhook, 'The webhook.', NO_STORE) },
  errors: { 401: UNAUTHENTICATED, 403: MANAGE_FEATURE, 404: NOT_FOUND_WEBHOOK, 503: UNAVAILABLE },
};

/** DELETE /api/apps/{appId}/webhooks/{webhookId} */
export const deleteWebhook = {
  tags: ['webhooks'],
  operationId: 'deleteWebhook',
  summary: 'Delete a webhook (admin feature)',
  description: `${MANAGE} Its deliveries not yet sent are dropped with it. Recorded as a \`webhook.deleted\` event. The request has no body.`,
  security: [{ bearer: [] }],
  params: WebhookParams,
  response: { 200: answer(Webhook, 'Deleted: what it was.', NO_STORE) },
  errors: {
    400: problem('The request has a body. Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: MANAGE_FEATURE,
    404: NOT_FOUND_WEBHOOK,
    503: UNAVAILABLE,
  },
};

/** POST /api/apps/{appId}/webhooks/{webhookId}/rotate-secret */
export const rotateWebhookSecret = {
  tags: ['webhooks'],
  operationId: 'rotateWebhookSecret',
  summary: "Rotate a webhook's secret (admin feature)",
  description: `${MANAGE} A new secret, in this answer only; the previous one goes on signing beside it for 24 hours (each delivery then carries both signatures, as the Standard Webhooks specification allows), so that the receiver can take the new one without refusing a delivery. Recorded as a \`webhook.secret_rotated\` event. The request has no body.`,
  security: [{ bearer: [] }],
  params: WebhookParams,
  response: { 200: answer(WebhookWithSecret, 'Rotated.', NO_STORE) },
  errors: {
    400: problem('The request has a body. Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: MANAGE_FEATURE,
    404: NOT_FOUND_WEBHOOK,
    503: UNAVAILABLE,
  },
};

/** GET /api/apps/{appId}/webhooks/{webhookId}/deliveries */
export const listDeliveries = {
  tags: ['webhooks'],
  operationId: 'listWebhookDeliveries',
  summary: "A webhook's deliveries (admin feature)",
  description: `${MANAGE} Newest first, with each one's state (pending, delivered, failed), attempts, the receiver's last status and the start of its answer. Ended deliveries are kept 30 days, at most 1,000 per webhook.`,
  security: [{ bearer: [] }],
  params: WebhookParams,
  querystring: Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DELIVERY_PAGE, default: 20 })),
    cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: "The previous page's `nextCursor`." })),
  }),
  response: {
    200: answer(
      Type.Object(
        { deliveries: Type.Array(Delivery, { maxItems: MAX_DELIVERY_PAGE }), nextCursor: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
      'The deliveries.',
      NO_STORE,
    ),
  },
  errors: {
    400: problem('A limit or cursor out of range. Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: MANAGE_FEATURE,
    404: NOT_FOUND_WEBHOOK,
    503: UNAVAILABLE,
  },
};

/** POST /api/apps/{appId}/webhooks/{webhookId}/deliveries/{deliveryId}/resend */
export const resendDelivery = {
  tags: ['webhooks'],
  operationId: 'resendWebhookDelivery',
  summary: 'Send a delivery again (admin feature)',
  description: `${MANAGE} The delivery is due at once, with a new round of attempts and retries; the same \`webhook-id\`, so that a receiver that had it drops it. The request has no body.`,
  security: [{ bearer: [] }],
  params: DeliveryParams,
  response: { 202: answer(Type.Object({ resent: Type.Literal(true) }, { additionalProperties: false }), 'Due now.', NO_STORE) },
  errors: {
    400: problem('The request has a body. Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: MANAGE_FEATURE,
    404: problem('No app has this AppID, or no webhook or delivery of these ids. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};
