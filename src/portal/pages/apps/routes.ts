import type { FastifyPluginAsync } from 'fastify';
import type { OwnedApp } from '../../../apps/owned-apps.js';
import { serviceBaseUrl } from '../../base-url.js';
import { formOf, type PortalContext } from '../../context.js';
import { issueSingleUseFormValue, useSingleUseFormValue } from '../../single-use-forms.js';
import { asDeveloper, csrfCheck, requireSession, sendPage, sessionOf, signedIn } from '../../respond.js';
import { refusalIn, retryAfter } from '../common/mistakes.js';
import { appNameOf } from './form.js';
import { appsPage, createdPage, newAppForm } from './views.js';

/** The developer's apps, and a new one. */
export const appsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, ownedApps, publicUrl, secureCookies }) => {
  const singleUseForms = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  app.get<{ Querystring: { done?: string } }>('/', async (request, reply) => {
    const { developer } = sessionOf(request);
    const deleted = request.query.done === 'deleted';
    const memberships = await members.appsOf(developer.id);
    const context = asDeveloper(request);
    const described = await Promise.all(
      memberships.map(async (membership) => {
        const [app, attention] = await Promise.all([apps.show(membership.appId, context), events.attention(membership.appId, context)]);
        return { membership, app, attention };
      }),
    );
    return sendPage(reply, appsPage(signedIn(request, reply), described, deleted));
  });

  app.get('/apps/new', async (request, reply) => {
    const sent = issueSingleUseFormValue(reply, singleUseForms);
    return sendPage(reply, newAppForm(signedIn(request, reply), sent));
  });

  app.post('/apps', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    const name = appNameOf(formOf(request));
    let created: OwnedApp;
    try {
      created = await ownedApps.create(name, developer.email, asDeveloper(request), { once: sent });
    } catch (error) {
      // A mistake in the form, or a limit reached: the form again, with what was typed and why.
      const refused = refusalIn(error, ['invalid_request', 'APP_LIMIT_REACHED', 'TOO_MANY_REQUESTS']);
      retryAfter(reply, refused);
      const again = issueSingleUseFormValue(reply, singleUseForms);
      return sendPage(reply, newAppForm(signedIn(request, reply), again, { name, message: refused.message }), refused.status);
    }
    return sendPage(reply, createdPage(signedIn(request, reply), created, serviceBaseUrl(request, publicUrl)), 201);
  });
};
