import type { FastifyPluginAsync } from 'fastify';
import { normaliseEmail } from '../../../developers/email.js';
import { anonymousRequest } from '../../../request-context.js';
import { formOf, type PortalContext } from '../../context.js';
import { csrfCheck, sendPage, signedOut } from '../../respond.js';
import { refusalIn, retryAfter } from '../common/mistakes.js';
import { forgotPasswordForm, linkMailed } from './views.js';

/**
 * "Forgot your password?", with a mail server (`SMTP_URL`); otherwise this page does not exist (404)
 * and reset links are the operator's (`tessera developers reset-link`). Answered the same whether or
 * not the address has an account; a mistyped address and the mail request limits are told.
 */
export const forgotPasswordPages: FastifyPluginAsync<PortalContext> = async (app, { developers }) => {
  if (!developers.mails) return;

  app.get('/forgot-password', async (_request, reply) => sendPage(reply, forgotPasswordForm(signedOut(reply))));

  app.post('/forgot-password', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const email = formOf(request).get('email') ?? '';
    try {
      await developers.mailPasswordReset(email, anonymousRequest(request.ip));
    } catch (error) {
      const refused = refusalIn(error, ['invalid_request', 'TOO_MANY_REQUESTS']);
      retryAfter(reply, refused);
      return sendPage(reply, forgotPasswordForm(signedOut(reply), { email, message: refused.message }), refused.status);
    }
    return sendPage(reply, linkMailed(signedOut(reply), normaliseEmail(email) ?? email));
  });
};
