import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Invitation } from '../../apps/members.js';
import type { DeveloperRecord } from '../../developers/developer.js';
import { isTesseraError } from '../../errors.js';
import { html, type Html } from '../html.js';
import { csrfField, page } from '../layout.js';
import { formField, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf } from '../respond.js';
import { utcDay } from '../time.js';
import { linkToken, type TokenQuery } from './common/link-token.js';

/**
 * An invitation link (`/portal/accept-invitation?token=…`): a developer not signed in signs in
 * first and comes back (`requireSession` keeps the address); then the page says which app it is
 * and who it is for, and "Accept invitation" posts the token back. The token is in the query only
 * on the GET (the portal sends no Referer; request logs hold no query) and in the form's body.
 */
export const invitationPages: FastifyPluginAsync<PortalContext> = async (app, { members }) => {
  app.addHook('preHandler', requireSession);

  app.get<TokenQuery>('/accept-invitation', async (request, reply) => {
    const { developer } = sessionOf(request);
    const token = linkToken(request.query.token);
    let invitation: Invitation;
    try {
      invitation = await members.invitation(token);
    } catch (error) {
      if (!isTesseraError(error) || error.code !== 'INVALID_LINK') throw error;
      return sendPage(reply, notUsable(reply, developer), 404);
    }
    const { appName } = invitation;
    if (invitation.email !== developer.email) return sendPage(reply, otherAddress(reply, developer, invitation.email, appName), 403);
    const csrfToken = reply.generateCsrf();
    return sendPage(
      reply,
      page({
        title: 'Invitation',
        developer,
        csrfToken,
        body: html`<section class="narrow">
<h1>Invitation to ${appName}</h1>
<p>You are invited to collaborate on <strong>${appName}</strong>: you will see the app and its keys (never its ClientSecret), change its token settings and revoke its tokens.</p>
<p class="meta">For ${invitation.email} · the link works until <span class="nowrap">${utcDay(invitation.expiresAt)}</span>.</p>
<form method="post" action="/portal/accept-invitation">
  ${csrfField(csrfToken)}
  <input type="hidden" name="token" value="${token}">
  <button type="submit">Accept invitation</button>
</form>
</section>`,
      }),
    );
  });

  app.post('/accept-invitation', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const token = linkToken(formField(request, 'token'));
    try {
      const accepted = await members.acceptInvitation(token, developer, asDeveloper(request));
      return seeOther(reply, `/portal/apps/${accepted.appId}`);
    } catch (error) {
      if (!isTesseraError(error)) throw error;
      if (error.code === 'INVALID_LINK') return sendPage(reply, notUsable(reply, developer), 404);
      if (error.code === 'FORBIDDEN') {
        const invitation = await members.invitation(token).catch(() => undefined);
        if (invitation === undefined) return sendPage(reply, notUsable(reply, developer), 404);
        return sendPage(reply, otherAddress(reply, developer, invitation.email, invitation.appName), 403);
      }
      throw error;
    }
  });
};

function notUsable(reply: FastifyReply, developer: DeveloperRecord): Html {
  return page({
    title: 'Invitation not valid',
    developer,
    csrfToken: reply.generateCsrf(),
    body: html`<section class="narrow">
<h1>This invitation does not work</h1>
<p>It was used already, replaced by a newer invitation, or has expired (invitations work for 7 days), or the link was not copied whole.</p>
<p>Ask the app's owner for a new invitation.</p>
<p><a href="/portal/">Back to your apps</a></p>
</section>`,
  });
}

function otherAddress(reply: FastifyReply, developer: DeveloperRecord, invited: string, appName: string): Html {
  return page({
    title: 'Invitation for another address',
    developer,
    csrfToken: reply.generateCsrf(),
    body: html`<section class="narrow">
<h1>This invitation is for another address</h1>
<p>The invitation to <strong>${appName}</strong> is for <strong>${invited}</strong>, and you are signed in as <strong>${developer.email}</strong>. Only the account with that address can accept it.</p>
<p>Sign out (at the top of the page), then open the link again and sign in as ${invited}; or ask the app's owner to invite ${developer.email} instead.</p>
</section>`,
  });
}
