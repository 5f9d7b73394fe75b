import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { RequestContext } from '../../../request-context.js';
import type { NewWebhookFields, WebhookWithSecret } from '../../../webhooks/service.js';
import type { WebhookDescription } from '../../../webhooks/webhook.js';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { issueSingleUseFormValue, useSingleUseFormValue } from '../../single-use-forms.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, signedIn } from '../../respond.js';
import { deliveryIdOf, EMPTY_FORM, mistakeOf, WEBHOOK_ID, webhookFields, webhookFormOf } from './form.js';
import { deletionPage, deliveriesPage, secretPage, webhooksPage, type ListState } from './views.js';

type WebhookParams = { Params: { appId: string; webhookId: string } };
type DeliveryParams = { Params: { appId: string; webhookId: string; deliveryId: string } };

/** Deliveries on a page. */
const DELIVERY_PAGE = 20;

/** A URL and every type's box: well under this. */
const WEBHOOK_BODY_LIMIT_BYTES = 8 * 1024;

/**
 * An app's webhooks (docs/portal.md, "Webhooks"; docs/webhooks.md): listed, added, given a new
 * secret and deleted, and each one's deliveries listed and sent again. The owner's alone
 * (`manage_webhooks`): its tab shows to the owner only, and a collaborator who opens an address
 * anyway gets `403`, another developer `404`, as on the other owner-only pages. A new webhook's
 * secret, and a rotated one, is shown once, on the answer to the form.
 */
export const webhooksPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, webhooks, clock, secureCookies }) => {
  const singleUseForms = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  /** What the developer may do on the app, if it may manage its webhooks: `403` for a collaborator, `404` for no member. */
  const accessOf = (request: FastifyRequest, appId: string) => members.permissions(appId, 'manage_webhooks', asDeveloper(request));

  /** The webhook, or 404. */
  async function webhookOf(appId: string, webhookId: string, context: RequestContext): Promise<WebhookDescription> {
    if (!WEBHOOK_ID.test(webhookId)) throw new TesseraError('NOT_FOUND', 'This app has no webhook of this id.');
    return webhooks.get(appId, webhookId, context);
  }

  /** The list and the new-webhook form, in `state`. */
  async function listPage(request: FastifyRequest, reply: FastifyReply, appId: string, state: ListState) {
    const context = asDeveloper(request);
    const [access, described, listed] = await Promise.all([
      accessOf(request, appId),
      apps.show(appId, context),
      webhooks.list(appId, context),
    ]);
    const once = issueSingleUseFormValue(reply, singleUseForms);
    return webhooksPage(signedIn(request, reply), { ...state, app: described, access, listed, now: clock.now(), once });
  }

  app.get<AppParams & { Querystring: { deleted?: unknown } }>('/apps/:appId/webhooks', async (request, reply) => {
    const { appId } = request.params;
    await accessOf(request, appId);
    const deleted = await deletedUrl(appId, request.query.deleted, asDeveloper(request));
    return sendPage(reply, await listPage(request, reply, appId, { form: EMPTY_FORM, deleted }));
  });

  const createRoute = { bodyLimit: WEBHOOK_BODY_LIMIT_BYTES, preValidation: csrfCheck(app) };
  app.post<AppParams>('/apps/:appId/webhooks', createRoute, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const access = await accessOf(request, appId);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    const form = webhookFormOf(formOf(request));
    let made: WebhookWithSecret;
    try {
      const fields: NewWebhookFields = webhookFields(form);
      made = await webhooks.create(appId, fields, context, sent);
    } catch (error) {
      const [status, mistake] = mistakeOf(error);
      return sendPage(reply, await listPage(request, reply, appId, { form, mistake }), status);
    }
    const described = await apps.show(appId, context);
    return sendPage(reply, secretPage(signedIn(request, reply), access, described, made, false), 201);
  });

  app.post<WebhookParams>('/apps/:appId/webhooks/:webhookId/rotate-secret', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId, webhookId } = request.params;
    const context = asDeveloper(request);
    const access = await accessOf(request, appId);
    await webhookOf(appId, webhookId, context);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    const rotated = await webhooks.rotateSecret(appId, webhookId, context, sent);
    const described = await apps.show(appId, context);
    return sendPage(reply, secretPage(signedIn(request, reply), access, described, rotated, true));
  });

  // Without JavaScript there is no confirm(): deleting asks first, on a page of its own.
  app.get<WebhookParams>('/apps/:appId/webhooks/:webhookId/delete', async (request, reply) => {
    const { appId, webhookId } = request.params;
    const context = asDeveloper(request);
    const access = await accessOf(request, appId);
    const [described, webhook] = await Promise.all([apps.show(appId, context), webhookOf(appId, webhookId, context)]);
    return sendPage(reply, deletionPage(signedIn(request, reply), access, described, webhook));
  });

  app.post<WebhookParams>('/apps/:appId/webhooks/:webhookId/delete', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId, webhookId } = request.params;
    const context = asDeveloper(request);
    await accessOf(request, appId);
    await webhookOf(appId, webhookId, context);
    await webhooks.delete(appId, webhookId, context);
    return seeOther(reply, `/portal/apps/${appId}/webhooks?deleted=${webhookId}`);
  });

  app.get<WebhookParams & { Querystring: { before?: unknown; resent?: unknown } }>(
    '/apps/:appId/webhooks/:webhookId',
    async (request, reply) => {
      const { appId, webhookId } = request.params;
      const context = asDeveloper(request);
      const access = await accessOf(request, appId);
      const before = request.query.before === undefined ? undefined : deliveryIdOf(request.query.before);
      if (request.query.before !== undefined && before === undefined) {
        throw new TesseraError('invalid_request', 'before must be the id of a delivery, as the link to older deliveries gives it.');
      }
      const webhook = await webhookOf(appId, webhookId, context);
      const [described, page] = await Promise.all([
        apps.show(appId, context),
        webhooks.deliveries(appId, webhookId, { before, limit: DELIVERY_PAGE }, context),
      ]);
      const input = {
        app: described,
        access,
        webhook,
        ...page,
        before,
        resent: deliveryIdOf(request.query.resent),
        now: clock.now(),
      };
      return sendPage(reply, deliveriesPage(signedIn(request, reply), input));
    },
  );

  app.post<DeliveryParams>(
    '/apps/:appId/webhooks/:webhookId/deliveries/:deliveryId/resend',
    { preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId, webhookId } = request.params;
      const context = asDeveloper(request);
      await accessOf(request, appId);
      await webhookOf(appId, webhookId, context);
      const deliveryId = deliveryIdOf(request.params.deliveryId);
      if (deliveryId === undefined) throw new TesseraError('NOT_FOUND', 'This webhook has no delivery of this id.');
      await webhooks.resend(appId, webhookId, deliveryId, context);
      return seeOther(reply, `/portal/apps/${appId}/webhooks/${webhookId}?resent=${deliveryId}`);
    },
  );

  /**
   * The URL of the webhook the address says was just deleted, from the app's audit log
   * (`webhook.deleted`, written with the deletion), so that nothing the notice says comes from the
   * address itself.
   */
  async function deletedUrl(appId: string, webhookId: unknown, context: RequestContext): Promise<string | undefined> {
    if (typeof webhookId !== 'string' || !WEBHOOK_ID.test(webhookId)) return undefined;
    const { events: deletions } = await events.list(appId, { type: 'webhook.deleted', limit: 20 }, context);
    const url = deletions.find((event) => event.details.webhookId === webhookId)?.details.url;
    return typeof url === 'string' ? url : undefined;
  }
};
