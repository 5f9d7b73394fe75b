import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { isTesseraError } from '../../errors.js';
import { anonymousRequest } from '../../request-context.js';
import { html } from '../html.js';
import { alert, csrfField, page } from '../layout.js';
import { formField, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, nextPage, seeOther, sendPage, setSessionCookies } from '../respond.js';
import { newPasswordFields } from './common/new-password.js';

type NextQuery = { Querystring: { next?: string } };

/**
 * Making an account on the portal, when the operator allows it (`PORTAL_SIGNUP=open`); otherwise
 * these pages do not exist (404) and accounts are the operator's (`tessera developers create`).
 * docs/portal.md, "Sign-up", says why a taken address is told as such.
 */
export const signUpPages: FastifyPluginAsync<PortalContext> = async (app, { signup, developers, sessions, cookies }) => {
  if (signup !== 'open') return;

  app.get<NextQuery>('/sign-up', async (request, reply) => {
    if (request.portalSession !== null) return seeOther(reply, nextPage(request.query.next));
    return sendPage(reply, signUpForm(reply, { next: request.query.next }));
  });

  app.post('/sign-up', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const email = formField(request, 'email') ?? '';
    const password = formField(request, 'password') ?? '';
    const next = formField(request, 'next');
    if (password !== (formField(request, 'repeat') ?? '')) {
      return sendPage(
        reply,
        signUpForm(reply, { next, email, message: 'The two passwords are not the same. Type the password twice.' }),
        400,
      );
    }
    try {
      const { developer } = await developers.signUp(email, password, anonymousRequest(request.ip));
      const account = await developers.find(developer.email);
      const started = await sessions.start(account, asDeveloper(request, account));
      setSessionCookies(reply, cookies, started);
      return seeOther(reply, nextPage(next));
    } catch (error) {
      if (!isTesseraError(error)) throw error;
      if (error.code === 'CONFLICT') {
        const message =
          'There is an account with this email address already. Sign in with it; if its password is lost, the operator of this service can give you a link that sets a new one.';
        return sendPage(reply, signUpForm(reply, { next, email, message }), 409);
      }
      if (error.code === 'TOO_MANY_REQUESTS') {
        if (error.details.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.details.retryAfterSeconds));
        return sendPage(reply, signUpForm(reply, { next, email, message: error.message }), 429);
      }
      if (error.status === 400) return sendPage(reply, signUpForm(reply, { next, email, message: error.message }), 400);
      throw error;
    }
  });
};

function signUpForm(reply: FastifyReply, { next, email, message }: { next?: string | undefined; email?: string; message?: string }) {
  const csrfToken = reply.generateCsrf();
  const signIn = next === undefined ? '/portal/sign-in' : `/portal/sign-in?next=${encodeURIComponent(next)}`;
  return page({
    title: 'Sign up',
    csrfToken,
    body: html`<section class="narrow">
<h1>Sign up</h1>
<p class="lead">A developer account of this Tessera service: your apps and their keys.</p>
${alert(message)}
<form method="post" action="/portal/sign-up" class="stack">
  ${csrfField(csrfToken)}
  ${next === undefined ? null : html`<input type="hidden" name="next" value="${next}">`}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${email ?? ''}" ${email === undefined ? html`autofocus` : null}>
  ${newPasswordFields({ label: 'Password', repeatLabel: 'Repeat the password', autofocus: email !== undefined })}
  <button type="submit">Sign up</button>
</form>
<p class="hint">Have an account? <a href="${signIn}">Sign in</a>.</p>
</section>`,
  });
}
