import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { isTesseraError } from '../../errors.js';
import { anonymousRequest } from '../../request-context.js';
import { html } from '../html.js';
import { alert, csrfField, page } from '../layout.js';
import { formField, type PortalContext } from '../context.js';
import { csrfCheck, nextPage, seeOther, sendPage, setSessionCookies } from '../respond.js';
import { PASSWORD_INPUT_MAX_LENGTH } from './common/new-password.js';

/** Signing in and out. */
export const signInPages: FastifyPluginAsync<PortalContext> = async (app, { sessions, cookies, signup }) => {
  app.get<{ Querystring: { next?: string; done?: string } }>('/sign-in', async (request, reply) => {
    if (request.portalSession !== null) return seeOther(reply, nextPage(request.query.next));
    return sendPage(reply, signInForm(reply, { next: request.query.next, signup, signedOut: request.query.done === 'signed-out' }));
  });

  app.post('/sign-in', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const email = formField(request, 'email') ?? '';
    const next = formField(request, 'next');
    try {
      const credentials = {
        email,
        password: formField(request, 'password') ?? '',
        clientAddress: request.ip,
        deviceToken: request.cookies[cookies.device.name],
      };
      const started = await sessions.signIn(credentials, anonymousRequest(request.ip));
      setSessionCookies(reply, cookies, started);
      return seeOther(reply, nextPage(next));
    } catch (error) {
      if (!isTesseraError(error) || (error.code !== 'INVALID_CREDENTIALS' && error.code !== 'TOO_MANY_REQUESTS')) throw error;
      if (error.details.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.details.retryAfterSeconds));
      return sendPage(reply, signInForm(reply, { next, email, message: error.message, signup }), error.status);
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

function signInForm(
  reply: FastifyReply,
  {
    next,
    email,
    message,
    signup,
    signedOut = false,
  }: { next?: string | undefined; email?: string; message?: string; signup?: 'open' | 'invite' | undefined; signedOut?: boolean },
) {
  return page({
    title: 'Sign in',
    csrfToken: reply.generateCsrf(),
    body: html`<section class="narrow">
<h1>Sign in</h1>
<p class="lead">The developer portal of Tessera: your apps and their keys.</p>
${signedOut ? html`<p class="notice success" role="status">You are signed out.</p>` : null}
${alert(message)}
<form method="post" action="/portal/sign-in" class="stack">
  ${csrfField(reply.generateCsrf())}
  ${next === undefined ? null : html`<input type="hidden" name="next" value="${next}">`}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${email ?? ''}" ${email === undefined ? html`autofocus` : null}>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="${PASSWORD_INPUT_MAX_LENGTH}" ${email === undefined ? null : html`autofocus`}>
  <button type="submit">Sign in</button>
</form>
${signup === 'open' ? html`<p>No account yet? <a href="/portal/sign-up${next === undefined ? '' : `?next=${encodeURIComponent(next)}`}">Sign up</a>.</p>` : null}
${
  signup === 'open'
    ? html`<p class="hint">Lost your password? The operator of this service can give you a link that sets a new one.</p>`
    : html`<p class="hint">No account yet? Ask the operator of this service for one (<code>tessera developers create</code>); they can also give you a link that sets a new password.</p>`
}
</section>`,
  });
}
