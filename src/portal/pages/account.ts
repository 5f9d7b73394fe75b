import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { isTesseraError } from '../../errors.js';
import { html } from '../html.js';
import { alert, csrfField, page } from '../layout.js';
import { formField, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf, setSessionCookies } from '../respond.js';
import { utcDay } from '../time.js';
import { newPasswordFields, PASSWORD_INPUT_MAX_LENGTH } from './common/new-password.js';

type AccountQuery = { Querystring: { changed?: string } };

/**
 * The developer's own account: its email, and a new password (the current one asked first, counted
 * as a sign-in). A change ends every session of the developer, in every browser; this browser gets
 * a fresh one.
 */
export const accountPages: FastifyPluginAsync<PortalContext> = async (app, { developers, sessions, cookies }) => {
  app.addHook('preHandler', requireSession);

  app.get<AccountQuery>('/account', async (request, reply) =>
    sendPage(reply, accountPage(request, reply, { changed: request.query.changed === 'password' })),
  );

  app.post('/account/password', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const current = formField(request, 'current') ?? '';
    const password = formField(request, 'password') ?? '';
    if (password !== (formField(request, 'repeat') ?? '')) {
      return sendPage(
        reply,
        accountPage(request, reply, { message: 'The two new passwords are not the same. Type the new password twice.' }),
        400,
      );
    }
    const context = asDeveloper(request);
    try {
      const changed = await developers.changePassword(developer.id, current, password, context, request.cookies[cookies.device.name]);
      const started = await sessions.start(changed, context);
      setSessionCookies(reply, cookies, started);
    } catch (error) {
      if (!isTesseraError(error)) throw error;
      if (error.code === 'INVALID_CREDENTIALS')
        return sendPage(reply, accountPage(request, reply, { message: 'The current password is wrong.' }), 400);
      if (error.code === 'TOO_MANY_REQUESTS') {
        if (error.details.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.details.retryAfterSeconds));
        return sendPage(reply, accountPage(request, reply, { message: error.message }), 429);
      }
      if (error.status === 400) return sendPage(reply, accountPage(request, reply, { message: error.message }), 400);
      throw error;
    }
    return seeOther(reply, '/portal/account?changed=password');
  });
};

function accountPage(request: FastifyRequest, reply: FastifyReply, { message, changed = false }: { message?: string; changed?: boolean }) {
  const { developer } = sessionOf(request);
  const csrfToken = reply.generateCsrf();
  return page({
    title: 'Your account',
    developer,
    csrfToken,
    body: html`<h1>Your account</h1>
${changed ? html`<p class="notice success" role="status">Your password is changed. Every other session of your account has ended: other browsers sign in again with the new password.</p>` : null}
<dl class="settings">
  <div><dt>Email</dt><dd>${developer.email}</dd></div>
  <div><dt>Account since</dt><dd>${utcDay(developer.createdAt)}</dd></div>
</dl>
<p class="hint">To use another email address, ask the operator of this service.</p>
<section class="narrow">
<h2>Change your password</h2>
${alert(message)}
<form method="post" action="/portal/account/password" class="stack">
  ${csrfField(csrfToken)}
  <input type="email" name="username" value="${developer.email}" autocomplete="username" readonly hidden>
  <label for="current">Current password</label>
  <input id="current" name="current" type="password" autocomplete="current-password" required maxlength="${PASSWORD_INPUT_MAX_LENGTH}">
  ${newPasswordFields({ label: 'New password', repeatLabel: 'Repeat the new password' })}
  <p class="hint">Every other session of your account ends, in every browser; this one stays signed in.</p>
  <button type="submit">Change password</button>
</form>
</section>`,
  });
}
