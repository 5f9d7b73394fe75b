import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import { normaliseEmail } from '../../../developers/email.js';
import type { IssuedInvitation } from '../../../apps/members.js';
import type { AppPermissions } from '../../../developers/roles.js';
import type { AppMembership } from '../../../developers/store.js';
import { appNotFound } from 'tessera-tokens/internal/error-catalogue.js';
import { serviceBaseUrl } from '../../base-url.js';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf, signedIn } from '../../respond.js';
import { refusalIn, retryAfter } from '../common/mistakes.js';
import { invitedEmailOf, isDeveloperId } from './form.js';
import { peoplePage, removalPage, type PeopleInput } from './views.js';

type MemberParams = { Params: { appId: string; developerId: string } };
type InvitationParams = { Params: { appId: string; invitationId: string } };

/**
 * An app's people: the owner and the collaborators. The owner invites (a one-time link shown once,
 * to pass on by hand) and removes collaborators; a collaborator may leave. Every action asks the
 * domain first (`members.permissions`), on the POST as on the GET.
 */
export const peoplePages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, credentials, publicUrl }) => {
  app.addHook('preHandler', requireSession);

  /** The people page, with what the page's form left (`state`): the members, and the invitations for whom may see them. */
  async function page(
    request: FastifyRequest,
    reply: FastifyReply,
    described: AppDescription,
    permissions: AppPermissions,
    state: Omit<PeopleInput, 'described' | 'permissions' | 'people' | 'pending'>,
  ) {
    const context = asDeveloper(request);
    const people = await members.membersOf(described.appId, context);
    const frame = signedIn(request, reply);
    const pending = permissions.may.manage_collaborators ? await members.pendingInvitations(described.appId, context) : [];
    return peoplePage(frame, { ...state, described, permissions, people, pending });
  }

  app.get<AppParams & { Querystring: { done?: unknown } }>('/apps/:appId/people', async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'view_app', context);
    const withdrawn = request.query.done === 'withdrawn';
    const described = await apps.show(appId, context);
    return sendPage(reply, await page(request, reply, described, permissions, { withdrawn }));
  });

  app.post<AppParams>('/apps/:appId/people/invitations', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'manage_collaborators', context);
    const described = await apps.show(appId, context);
    const email = invitedEmailOf(formOf(request));
    let invitation: IssuedInvitation;
    try {
      invitation = await members.invite(appId, email, context);
    } catch (error) {
      const refused = refusalIn(error, ['invalid_request', 'TOO_MANY_REQUESTS']);
      retryAfter(reply, refused);
      return sendPage(reply, await page(request, reply, described, permissions, { email, message: refused.message }), refused.status);
    }
    const link = invitation.url ?? `${serviceBaseUrl(request, publicUrl)}${invitation.path}`;
    const invited = { email: normaliseEmail(email) ?? email, link, expiresAt: invitation.expiresAt, mailed: invitation.mailed };
    return sendPage(reply, await page(request, reply, described, permissions, { invited }));
  });

  // Withdrawing needs no confirmation page: inviting again undoes it.
  app.post<InvitationParams>(
    '/apps/:appId/people/invitations/:invitationId/withdraw',
    { preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId, invitationId } = request.params;
      await members.withdrawInvitation(appId, invitationId, asDeveloper(request));
      return seeOther(reply, `/portal/apps/${appId}/people?done=withdrawn`);
    },
  );

  // Without JavaScript there is no confirm(): removing and leaving each get a page that asks first.
  app.get<MemberParams>('/apps/:appId/people/:developerId/remove', async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId, developerId } = request.params;
    const context = asDeveloper(request);
    const leaving = developerId === developer.id;
    const permissions = await members.permissions(appId, leaving ? 'view_app' : 'manage_collaborators', context);
    const member = await collaborator(request, appId, developerId);
    const described = await apps.show(appId, context);
    const theirs = (await credentials.list(appId, context)).filter(
      (credential) => credential.createdBy === 'developer' && credential.createdByDeveloperId === developerId,
    );
    return sendPage(reply, removalPage(signedIn(request, reply), { appId, permissions, described, member, leaving, theirs }));
  });

  app.post<MemberParams>('/apps/:appId/people/:developerId/remove', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId, developerId } = request.params;
    const leaving = developerId === developer.id;
    const context = asDeveloper(request);
    await members.permissions(appId, leaving ? 'view_app' : 'manage_collaborators', context);
    await collaborator(request, appId, developerId);
    await members.removeCollaborator(appId, developerId, context);
    return seeOther(reply, leaving ? '/portal/' : `/portal/apps/${appId}/people`);
  });

  /** The collaborator `developerId` of the app; 404 for anyone else (the owner is not removed this way). */
  async function collaborator(request: FastifyRequest, appId: string, developerId: string): Promise<AppMembership> {
    const member = isDeveloperId(developerId)
      ? (await members.membersOf(appId, asDeveloper(request))).find((one) => one.developerId === developerId)
      : undefined;
    if (member === undefined || member.role !== 'collaborator') throw appNotFound();
    return member;
  }
};
