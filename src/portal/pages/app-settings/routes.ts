import type { FastifyPluginAsync } from 'fastify';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, signedIn } from '../../respond.js';
import { mistakeIn } from '../common/mistakes.js';
import { configurationOf, deletionNameOf, revocationOf, settingsFormOf } from './form.js';
import { doneMessage, settingsPage } from './views.js';

/**
 * The settings form's body: the origins' text at its longest, form-encoded (a browser writes `://`
 * and line breaks as `%3A%2F%2F` and `%0D%0A`), and the other fields. Larger than the server's
 * limit for other bodies, so only for a signed-in developer (checked before the body is read).
 */
const SETTINGS_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * An app's settings: its token settings (owner and collaborators), revoking all of its tokens of a
 * kind (both), and deleting it (the owner only).
 */
export const appSettingsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, revoker }) => {
  app.addHook('preHandler', requireSession);

  app.get<AppParams & { Querystring: { done?: string } }>('/apps/:appId/settings', async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'change_configuration', context);
    const described = await apps.show(appId, context);
    return sendPage(reply, settingsPage(signedIn(request, reply), described, permissions, { done: doneMessage(request.query.done) }));
  });

  const settingsRoute = { onRequest: requireSession, bodyLimit: SETTINGS_BODY_LIMIT_BYTES, preValidation: csrfCheck(app) };
  app.post<AppParams>('/apps/:appId/settings', settingsRoute, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'change_configuration', context);
    const form = settingsFormOf(formOf(request));
    try {
      await apps.configure(appId, configurationOf(form), context);
    } catch (error) {
      const mistake = { section: 'settings' as const, message: mistakeIn(error) };
      const described = await apps.show(appId, context);
      return sendPage(reply, settingsPage(signedIn(request, reply), described, permissions, { form, mistake }), 400);
    }
    return seeOther(reply, `/portal/apps/${appId}/settings?done=saved`);
  });

  app.post<AppParams>('/apps/:appId/revoke-tokens', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'revoke_tokens', context);
    const asked = revocationOf(formOf(request));
    if ('mistake' in asked) {
      const mistake = { section: 'revoke' as const, message: asked.mistake };
      const described = await apps.show(appId, context);
      return sendPage(reply, settingsPage(signedIn(request, reply), described, permissions, { mistake }), 400);
    }
    await revoker.revokeAll(appId, asked.kind, context);
    return seeOther(reply, `/portal/apps/${appId}/settings?done=revoked-${asked.kind}`);
  });

  app.post<AppParams>('/apps/:appId/delete', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'delete_app', context);
    const described = await apps.show(appId, context);
    const typed = deletionNameOf(formOf(request));
    if (typed.trim() !== described.name) {
      const mistake = {
        section: 'delete' as const,
        message: 'That is not the name of this app: type it exactly as shown, to confirm that you mean this app.',
      };
      return sendPage(reply, settingsPage(signedIn(request, reply), described, permissions, { mistake, deleteName: typed }), 400);
    }
    await apps.delete(appId, context);
    return seeOther(reply, '/portal/?done=deleted');
  });
};
