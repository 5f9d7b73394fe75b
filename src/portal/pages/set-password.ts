import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { DeveloperRecord } from '../../developers/developer.js';
import { isTesseraError } from '../../errors.js';
import { anonymousRequest } from '../../request-context.js';
import { html, type Html } from '../html.js';
import { alert, csrfField, page } from '../layout.js';
import { formField, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, seeOther, sendPage, setSessionCookies } from '../respond.js';
import { linkToken, type TokenQuery } from './common/link-token.js';
import { newPasswordFields } from './common/new-password.js';

/**
 * The page of both password links (`developers create` without a password, `developers reset-link`):
 * a new password, then a session for this browser (every earlier session of the developer ended
 * with the change). Needs no session: the link is the proof, and no sign-in limit stands in its way.
 */
export const setPasswordPages: FastifyPluginAsync<PortalContext> = async (app, { developers, sessions, cookies }) => {
  /** The developer the link is for, or null when it does not work. */
  const ownerOf = async (token: string): Promise<DeveloperRecord | null> => {
    try {
      return await developers.passwordLinkOwner(token);
    } catch (error) {
      if (!isTesseraError(error) || error.code !== 'INVALID_LINK') throw error;
      return null;
    }
  };

  app.get<TokenQuery>('/set-password', async (request, reply) => {
    const token = linkToken(request.query.token);
    const developer = await ownerOf(token);
    if (developer === null) return sendPage(reply, notUsable(reply), 404);
    return sendPage(reply, setPasswordForm(reply, token, developer.email));
  });

  app.post('/set-password', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const token = linkToken(formField(request, 'token'));
    const password = formField(request, 'password') ?? '';
    let developer = await ownerOf(token);
    if (developer === null) return sendPage(reply, notUsable(reply), 404);
    if (password !== (formField(request, 'repeat') ?? '')) {
      return sendPage(
        reply,
        setPasswordForm(reply, token, developer.email, 'The two passwords are not the same. Type the new password twice.'),
        400,
      );
    }
    try {
      developer = await developers.setPasswordWithLink(token, password, anonymousRequest(request.ip));
    } catch (error) {
      if (!isTesseraError(error)) throw error;
      if (error.code === 'INVALID_LINK') return sendPage(reply, notUsable(reply), 404);
      if (error.status === 400) return sendPage(reply, setPasswordForm(reply, token, developer.email, error.message), 400);
      throw error;
    }
    const started = await sessions.start(developer, asDeveloper(request, developer));
    setSessionCookies(reply, cookies, started);
    return seeOther(reply, '/portal/');
  });
};

function setPasswordForm(reply: FastifyReply, token: string, email: string, message?: string): Html {
  const csrfToken = reply.generateCsrf();
  return page({
    title: 'Set your password',
    csrfToken,
    body: html`<section class="narrow">
<h1>Set your password</h1>
<p class="lead">For the developer account <strong>${email}</strong>. This link works once.</p>
${alert(message)}
<form method="post" action="/portal/set-password" class="stack">
  ${csrfField(csrfToken)}
  <input type="hidden" name="token" value="${token}">
  <input type="email" name="username" value="${email}" autocomplete="username" readonly hidden>
  ${newPasswordFields({ label: 'New password', repeatLabel: 'Repeat the password', autofocus: true })}
  <button type="submit">Set password and sign in</button>
</form>
</section>`,
  });
}

function notUsable(reply: FastifyReply): Html {
  return page({
    title: 'Link not valid',
    csrfToken: reply.generateCsrf(),
    body: html`<section class="narrow">
<h1>This link does not work</h1>
<p>It was used already, replaced by a newer link, or has expired (a new account's link works for 7 days, a reset link for 1 day), or it was not copied whole.</p>
<p>Ask the operator of this service for a new one (<code>tessera developers reset-link EMAIL</code>), or <a href="/portal/sign-in">sign in</a> if you know your password.</p>
</section>`,
  });
}
