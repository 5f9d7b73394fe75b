import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { anonymousRequest } from '../../../request-context.js';
import { formOf, type PortalContext } from '../../context.js';
import { csrfCheck, nextPage, seeOther, sendPage, setSessionCookies, signedOut } from '../../respond.js';
import { refusalIn, retryAfter } from '../common/mistakes.js';
import { signInFormOf } from './form.js';
import { signInForm } from './views.js';

/** Signing in and out. */
export const signInPages: FastifyPluginAsync<PortalContext> = async (app, { sessions, cookies, signup, developers }) => {
  const mails = developers.mails;
  app.get<{ Querystring: { next?: string; done?: string } }>('/sign-in', async (request, reply) => {
    if (request.portalSession !== null) return seeOther(reply, nextPage(request.query.next));
    const shown = { next: request.query.next, signup, mails, signedOut: request.query.done === 'signed-out' };
    return sendPage(reply, signInForm(signedOut(reply), shown));
  });

  app.post('/sign-in', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { email, password, next } = signInFormOf(formOf(request));
    try {
      const credentials = { email, password, clientAddress: request.ip, deviceToken: request.cookies[cookies.device.name] };
      const started = await sessions.signIn(credentials, anonymousRequest(request.ip));
      setSessionCookies(reply, cookies, started);
      return seeOther(reply, nextPage(next));
    } catch (error) {
      const refused = refusalIn(error, ['INVALID_CREDENTIALS', 'TOO_MANY_REQUESTS']);
      retryAfter(reply, refused);
      return sendPage(reply, signInForm(signedOut(reply), { next, email, message: refused.message, signup, mails }), refused.status);
    }
  });

  app.post('/sign-out', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const token = request.cookies[cookies.session.name];
    if (token !== undefined) await sessions.signOut(token, { clientAddress: request.ip, by: developerOf(request) });
    reply.clearCookie(cookies.session.name, cookies.session.options);
    return seeOther(reply, '/portal/sign-in?done=signed-out');
  });
};

function developerOf(request: FastifyRequest) {
  const session = request.portalSession;
  return session === null ? null : ({ kind: 'developer', developerId: session.developer.id } as const);
}
