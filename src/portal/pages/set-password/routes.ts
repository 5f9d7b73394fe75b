import type { FastifyPluginAsync } from 'fastify';
import type { DeveloperRecord } from '../../../developers/developer.js';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { anonymousRequest } from '../../../request-context.js';
import { formOf, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, seeOther, sendPage, setSessionCookies, signedOut } from '../../respond.js';
import { linkToken, type TokenQuery } from '../common/link-token.js';
import { refusalIn } from '../common/mistakes.js';
import { setPasswordFormOf } from './form.js';
import { notUsable, setPasswordForm } from './views.js';

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
    if (developer === null) return sendPage(reply, notUsable(signedOut(reply)), 404);
    return sendPage(reply, setPasswordForm(signedOut(reply), token, developer.email));
  });

  app.post('/set-password', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { token, password, same } = setPasswordFormOf(formOf(request));
    let developer = await ownerOf(token);
    if (developer === null) return sendPage(reply, notUsable(signedOut(reply)), 404);
    if (!same) {
      const message = 'The two passwords are not the same. Type the new password twice.';
      return sendPage(reply, setPasswordForm(signedOut(reply), token, developer.email, message), 400);
    }
    try {
      developer = await developers.setPasswordWithLink(token, password, anonymousRequest(request.ip));
    } catch (error) {
      if (isTesseraError(error) && error.code === 'INVALID_LINK') return sendPage(reply, notUsable(signedOut(reply)), 404);
      const refused = refusalIn(error, ['invalid_request']);
      return sendPage(reply, setPasswordForm(signedOut(reply), token, developer.email, refused.message), 400);
    }
    const started = await sessions.start(developer, asDeveloper(request, developer));
    setSessionCookies(reply, cookies, started);
    return seeOther(reply, '/portal/');
  });
};
