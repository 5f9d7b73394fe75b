import type { FastifyPluginAsync } from 'fastify';
import type { Invitation } from '../../../apps/members.js';
import { formOf, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf, signedIn } from '../../respond.js';
import { linkToken, type TokenQuery } from '../common/link-token.js';
import { refusalIn } from '../common/mistakes.js';
import { invitationTokenOf } from './form.js';
import { invitationPage, notUsable, otherAddress } from './views.js';

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
      refusalIn(error, ['INVALID_LINK']);
      return sendPage(reply, notUsable(signedIn(request, reply)), 404);
    }
    if (invitation.email !== developer.email) {
      return sendPage(reply, otherAddress(signedIn(request, reply), invitation.email, invitation.appName), 403);
    }
    return sendPage(reply, invitationPage(signedIn(request, reply), token, invitation));
  });

  app.post('/accept-invitation', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const token = invitationTokenOf(formOf(request));
    try {
      const accepted = await members.acceptInvitation(token, developer, asDeveloper(request));
      return seeOther(reply, `/portal/apps/${accepted.appId}`);
    } catch (error) {
      const refused = refusalIn(error, ['INVALID_LINK', 'FORBIDDEN']);
      if (refused.code === 'INVALID_LINK') return sendPage(reply, notUsable(signedIn(request, reply)), 404);
      const invitation = await members.invitation(token).catch((): undefined => undefined);
      if (invitation === undefined) return sendPage(reply, notUsable(signedIn(request, reply)), 404);
      return sendPage(reply, otherAddress(signedIn(request, reply), invitation.email, invitation.appName), 403);
    }
  });
};
