import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppPermissions } from '../../../developers/roles.js';
import { serviceBaseUrl } from '../../base-url.js';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, signedIn } from '../../respond.js';
import type { OriginFormState } from '../common/quickstarts.js';
import { mistakeIn } from '../common/mistakes.js';
import { originOf, typedOriginOf } from './form.js';
import { DONE, doneMessage, overviewPage } from './views.js';

/**
 * An app's page: its keys (never the ClientSecret again), quickstarts with them, and a summary of its
 * settings; and the quickstarts' form that adds a web page's origin to the app's allowed origins.
 */
export const appPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, clock, publicUrl, alerts }) => {
  app.addHook('preHandler', requireSession);

  /** The overview of `appId`, with the add-origin form in `origin`'s state. */
  async function overview(
    request: FastifyRequest,
    reply: FastifyReply,
    appId: string,
    permissions: AppPermissions,
    origin: OriginFormState,
    alertsChanged = false,
  ) {
    const context = asDeveloper(request);
    const [described, exposures, alertsOn] = await Promise.all([
      apps.show(appId, context),
      events.secretExposures(appId, context),
      alerts?.enabled(appId, context),
    ]);
    const baseUrl = serviceBaseUrl(request, publicUrl);
    const shownAlerts = alertsOn === undefined ? undefined : { on: alertsOn, changed: alertsChanged };
    const input = { app: described, permissions, exposures, alerts: shownAlerts, now: clock.now(), baseUrl, origin };
    return overviewPage(signedIn(request, reply), input);
  }

  app.get<AppParams & { Querystring: { done?: string } }>('/apps/:appId', async (request, reply) => {
    const { appId } = request.params;
    // Another developer's app is 404, exactly as an app that does not exist.
    const permissions = await members.permissions(appId, 'view_app', asDeveloper(request));
    const { done } = request.query;
    const alertsChanged = done === 'alerts-on' || done === 'alerts-off';
    return sendPage(reply, await overview(request, reply, appId, permissions, { done: doneMessage(done) }, alertsChanged));
  });

  // Each member turns the app's alerts off or on for themselves (with mail only).
  if (alerts !== undefined) {
    app.post<AppParams>('/apps/:appId/alerts', { preValidation: csrfCheck(app) }, async (request, reply) => {
      const { appId } = request.params;
      const on = formOf(request).get('alerts') === 'on';
      await alerts.set(appId, on, asDeveloper(request));
      return seeOther(reply, `/portal/apps/${appId}?done=${on ? 'alerts-on' : 'alerts-off'}#alerts`);
    });
  }

  // The quickstarts' "Your page's origin": the app's allowed origins become those it had and this
  // one (owner and collaborators may change the configuration). A form of the overview and of the
  // new-app page; the portal's script sends it with `Accept: application/json` and shows the answer
  // in place, so that the new-app page, with its ClientSecret, stays. Origins added at the same
  // moment are all kept (`AppService.allowOrigin`).
  app.post<AppParams>(
    '/apps/:appId/allowed-origins',
    { onRequest: requireSession, preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId } = request.params;
      const context = asDeveloper(request);
      const permissions = await members.permissions(appId, 'change_configuration', context);
      const typed = typedOriginOf(formOf(request));
      const wantsJson = (request.headers.accept ?? '').startsWith('application/json');
      let allowed: readonly string[];
      let outcome: keyof typeof DONE;
      try {
        const { app: updated, added } = await apps.allowOrigin(appId, originOf(typed), context);
        allowed = updated.configuration.allowedOrigins;
        outcome = added ? 'origin-added' : 'origin-listed';
      } catch (error) {
        const message = mistakeIn(error);
        if (wantsJson)
          return reply.status(400).send({ message, allowedOrigins: (await apps.show(appId, context)).configuration.allowedOrigins });
        return sendPage(reply, await overview(request, reply, appId, permissions, { mistake: { message, typed } }), 400);
      }
      if (wantsJson) return reply.send({ message: DONE[outcome], allowedOrigins: allowed });
      return seeOther(reply, `/portal/apps/${appId}?done=${outcome}#web-page-origins`);
    },
  );
};
