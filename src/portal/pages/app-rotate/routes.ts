import type { FastifyPluginAsync } from 'fastify';
import type { RotatedSecret } from '../../../apps/service.js';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { issueSingleUseFormValue, useSingleUseFormValue } from '../../single-use-forms.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, signedIn } from '../../respond.js';
import { mistakeIn } from '../common/mistakes.js';
import { EMPTY_FORM, rotationFormOf, rotationOptions } from './form.js';
import { rotatedPage, rotationPage } from './views.js';

/**
 * Rotating the ClientSecret (the owner only): a form confirmed by typing the ClientID, then the new
 * secret, shown once.
 */
export const appRotatePages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, secureCookies, clock }) => {
  const singleUseForms = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  app.get<AppParams & { Querystring: { ended?: unknown } }>('/apps/:appId/rotate-secret', async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    await members.permissions(appId, 'rotate_secret', context);
    const described = await apps.show(appId, context);
    const sent = issueSingleUseFormValue(reply, singleUseForms);
    return sendPage(
      reply,
      rotationPage(signedIn(request, reply), sent, described, clock.now(), EMPTY_FORM, undefined, request.query.ended),
    );
  });

  app.post<AppParams>('/apps/:appId/end-previous-secret', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    await members.permissions(appId, 'rotate_secret', context);
    const { endedPreviousSecretValidUntil } = await apps.endPreviousSecret(appId, context);
    return seeOther(reply, `/portal/apps/${appId}/rotate-secret?ended=${endedPreviousSecretValidUntil === null ? 'none' : 'yes'}`);
  });

  app.post<AppParams>('/apps/:appId/rotate-secret', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    await members.permissions(appId, 'rotate_secret', context);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    const described = await apps.show(appId, context);
    const form = rotationFormOf(formOf(request));
    let rotated: RotatedSecret;
    try {
      rotated = await apps.rotateSecret(appId, { ...rotationOptions(form, described.clientId), once: sent }, context);
    } catch (error) {
      const message = mistakeIn(error);
      const again = issueSingleUseFormValue(reply, singleUseForms);
      return sendPage(reply, rotationPage(signedIn(request, reply), again, described, clock.now(), form, message), 400);
    }
    return sendPage(reply, rotatedPage(signedIn(request, reply), described, rotated, form.revokeAdminTokens));
  });
};
