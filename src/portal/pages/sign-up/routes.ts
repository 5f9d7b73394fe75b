import type { FastifyPluginAsync } from 'fastify';
import { anonymousRequest } from '../../../request-context.js';
import { formOf, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, nextPage, seeOther, sendPage, setSessionCookies, signedOut } from '../../respond.js';
import { refusalIn, retryAfter } from '../common/mistakes.js';
import { signUpFormOf } from './form.js';
import { signUpForm } from './views.js';

type NextQuery = { Querystring: { next?: string } };

/** What the form says of an address that has an account already (docs/portal.md, "Sign-up", says why it is told). */
const TAKEN =
  'There is an account with this email address already. Sign in with it; if its password is lost, the operator of this service can give you a link that sets a new one.';
/** The same, when the service sends mail: the sign-in page mails a link itself. */
const TAKEN_WITH_MAIL =
  'There is an account with this email address already. Sign in with it; if its password is lost, \u201cForgot your password?\u201d on the sign-in page mails a link that sets a new one.';

/**
 * Making an account on the portal, when the operator allows it (`PORTAL_SIGNUP=open`); otherwise
 * these pages do not exist (404) and accounts are the operator's (`tessera developers create`).
 * docs/portal.md, "Sign-up", says why a taken address is told as such.
 */
export const signUpPages: FastifyPluginAsync<PortalContext> = async (app, { signup, developers, sessions, cookies }) => {
  if (signup !== 'open') return;

  app.get<NextQuery>('/sign-up', async (request, reply) => {
    if (request.portalSession !== null) return seeOther(reply, nextPage(request.query.next));
    return sendPage(reply, signUpForm(signedOut(reply), { next: request.query.next }));
  });

  app.post('/sign-up', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { email, password, same, next } = signUpFormOf(formOf(request));
    if (!same) {
      const message = 'The two passwords are not the same. Type the password twice.';
      return sendPage(reply, signUpForm(signedOut(reply), { next, email, message }), 400);
    }
    try {
      const { developer } = await developers.signUp(email, password, anonymousRequest(request.ip));
      const account = await developers.find(developer.email);
      const started = await sessions.start(account, asDeveloper(request, account));
      setSessionCookies(reply, cookies, started);
      return seeOther(reply, nextPage(next));
    } catch (error) {
      const refused = refusalIn(error, ['invalid_request', 'CONFLICT', 'TOO_MANY_REQUESTS']);
      retryAfter(reply, refused);
      const message = refused.code === 'CONFLICT' ? (developers.mails ? TAKEN_WITH_MAIL : TAKEN) : refused.message;
      return sendPage(reply, signUpForm(signedOut(reply), { next, email, message }), refused.status);
    }
  });
};
