import type { FastifyPluginAsync } from 'fastify';
import { formOf, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf, setSessionCookies, signedIn } from '../../respond.js';
import { refusalIn, retryAfter } from '../common/mistakes.js';
import { passwordChangeOf } from './form.js';
import { accountPage } from './views.js';

type AccountQuery = { Querystring: { changed?: string; done?: string } };

/**
 * The developer's own account: its email, and a new password (the current one asked first, counted
 * as a sign-in). A change ends every session of the developer, in every browser; this browser gets
 * a fresh one.
 */
export const accountPages: FastifyPluginAsync<PortalContext> = async (app, { developers, sessions, cookies }) => {
  app.addHook('preHandler', requireSession);

  app.get<AccountQuery>('/account', async (request, reply) =>
    sendPage(
      reply,
      accountPage(signedIn(request, reply), {
        changed: request.query.changed === 'password',
        mailed: request.query.done === 'confirmation-mailed',
      }),
    ),
  );

  app.post('/account/password', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const { current, password, same } = passwordChangeOf(formOf(request));
    if (!same) {
      const message = 'The two new passwords are not the same. Type the new password twice.';
      return sendPage(reply, accountPage(signedIn(request, reply), { message }), 400);
    }
    const context = asDeveloper(request);
    try {
      const changed = await developers.changePassword(developer.id, current, password, context, request.cookies[cookies.device.name]);
      const started = await sessions.start(changed, context);
      setSessionCookies(reply, cookies, started);
    } catch (error) {
      const refused = refusalIn(error, ['invalid_request', 'INVALID_CREDENTIALS', 'TOO_MANY_REQUESTS']);
      retryAfter(reply, refused);
      // A wrong current password is 400 here: the developer is signed in, and only the form is wrong.
      const message = refused.code === 'INVALID_CREDENTIALS' ? 'The current password is wrong.' : refused.message;
      return sendPage(
        reply,
        accountPage(signedIn(request, reply), { message }),
        refused.code === 'INVALID_CREDENTIALS' ? 400 : refused.status,
      );
    }
    return seeOther(reply, '/portal/account?changed=password');
  });
};
