import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RequestContext } from '../../request-context.js';
import type { WebhookService } from '../../webhooks/service.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { refuseBodies } from '../content-types.js';
import { preventCaching } from 'tessera-tokens/internal/http/headers.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from 'tessera-tokens/internal/http/middleware/fastify.js';
import {
  WEBHOOK_DELIVERIES_PATH,
  WEBHOOK_DELIVERY_RESEND_PATH,
  WEBHOOK_PATH,
  WEBHOOK_SECRET_ROTATION_PATH,
  WEBHOOKS_PATH,
} from '../paths.js';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  resendDelivery,
  rotateWebhookSecret,
} from './webhooks.schema.js';

/** A URL and a list of event types: well under this. */
const WEBHOOK_BODY_LIMIT_BYTES = 8 * 1024;

/**
 * An app's webhooks, for its admin with `webhooks:manage` (or of the app's own ClientID). Answers
 * with a secret are never cached. Needs `tesseraAuth` registered in the same scope.
 */
export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  preventCaching(app);
  const contextOf = (request: { ip: string; principal: RequestContext['by'] }): RequestContext => ({
    clientAddress: request.ip,
    by: request.principal,
  });

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    scope.get(WEBHOOKS_PATH, { schema: listWebhooks, onRequest: requireAdmin }, async (request) => ({
      webhooks: await webhooks.list(request.params.appId, contextOf(request)),
    }));
    scope.post(
      WEBHOOKS_PATH,
      { schema: createWebhook, onRequest: requireAdmin, bodyLimit: WEBHOOK_BODY_LIMIT_BYTES },
      async (request, reply) => reply.code(201).send(await webhooks.create(request.params.appId, request.body, contextOf(request))),
    );
    scope.get(WEBHOOK_PATH, { schema: getWebhook, onRequest: requireAdmin }, async (request) =>
      webhooks.get(request.params.appId, request.params.webhookId, contextOf(request)),
    );
    scope.get(WEBHOOK_DELIVERIES_PATH, { schema: listDeliveries, onRequest: requireAdmin }, async (request) => {
      const { limit, cursor } = request.query;
      return webhooks.deliveries(
        request.params.appId,
        request.params.webhookId,
        { limit: limit ?? 20, before: cursor === undefined ? undefined : Number(cursor) },
        contextOf(request),
      );
    });
  });

  // Their own scope: these requests carry no body, but clients often label the empty one as JSON.
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    refuseBodies(scope, () => new TesseraError('invalid_request', 'This request takes no body.'));
    scope.delete(WEBHOOK_PATH, { schema: deleteWebhook, onRequest: requireAdmin }, async (request) =>
      webhooks.delete(request.params.appId, request.params.webhookId, contextOf(request)),
    );
    scope.post(WEBHOOK_SECRET_ROTATION_PATH, { schema: rotateWebhookSecret, onRequest: requireAdmin }, async (request) =>
      webhooks.rotateSecret(request.params.appId, request.params.webhookId, contextOf(request)),
    );
    scope.post(WEBHOOK_DELIVERY_RESEND_PATH, { schema: resendDelivery, onRequest: requireAdmin }, async (request, reply) => {
      const { appId, webhookId, deliveryId } = request.params;
      await webhooks.resend(appId, webhookId, Number(deliveryId), contextOf(request));
      return reply.code(202).send({ resent: true as const });
    });
  });

  refuseOtherMethods(app, WEBHOOKS_PATH, ['GET', 'POST']);
  refuseOtherMethods(app, WEBHOOK_PATH, ['GET', 'DELETE']);
  refuseOtherMethods(app, WEBHOOK_SECRET_ROTATION_PATH, ['POST']);
  refuseOtherMethods(app, WEBHOOK_DELIVERIES_PATH, ['GET']);
  refuseOtherMethods(app, WEBHOOK_DELIVERY_RESEND_PATH, ['POST']);
};
