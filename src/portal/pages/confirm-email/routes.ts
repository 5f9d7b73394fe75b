import type { FastifyPluginAsync } from 'fastify';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { formOf, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf, signedOut } from '../../respond.js';
import type { EmailConfirmation } from '../../../developers/accounts.js';
import { retryAfter } from '../common/mistakes.js';
import { confirmed, confirmForm, notUsable } from './views.js';

type TokenQuery = { Querystring: { token?: string } };

/**
 * The link mailed at sign-up that confirms a developer's address, and the banner's "Mail the link
 * again", with a mail server (`SMTP_URL`); otherwise these pages do not exist (404). The link needs
 * no session: it is the proof. Its page asks for a press of a button, so that a mail scanner that
 * opens links confirms nothing.
 */
export const confirmEmailPages: FastifyPluginAsync<PortalContext> = async (app, { developers }) => {
  if (!developers.mails) return;

  const working = async (token: string, confirm: boolean): Promise<EmailConfirmation | null> => {
    try {
      return await (confirm ? developers.confirmEmail(token) : developers.emailConfirmation(token));
    } catch (error) {
      if (!isTesseraError(error) || error.code !== 'INVALID_LINK') throw error;
      return null;
    }
  };

  app.get<TokenQuery>('/confirm-email', async (request, reply) => {
    const token = request.query.token ?? '';
    const confirmation = await working(token, false);
    if (confirmation === null) return sendPage(reply, notUsable(signedOut(reply)), 404);
    if (confirmation.confirmed) return sendPage(reply, confirmed(signedOut(reply), confirmation.email));
    return sendPage(reply, confirmForm(signedOut(reply), token, confirmation.email));
  });

  app.post('/confirm-email', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const confirmation = await working(formOf(request).get('token') ?? '', true);
    if (confirmation === null) return sendPage(reply, notUsable(signedOut(reply)), 404);
    return sendPage(reply, confirmed(signedOut(reply), confirmation.email));
  });

  app.post('/account/confirm-email', { preHandler: requireSession, preValidation: csrfCheck(app) }, async (request, reply) => {
    try {
      await developers.mailConfirmation(sessionOf(request).developer.id, asDeveloper(request));
    } catch (error) {
      if (!isTesseraError(error) || error.code !== 'TOO_MANY_REQUESTS') throw error;
      retryAfter(reply, error);
      throw error;
    }
    return seeOther(reply, '/portal/account?done=confirmation-mailed');
  });
};
