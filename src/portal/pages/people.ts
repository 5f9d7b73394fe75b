import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDescription } from '../../apps/app.js';
import { normaliseEmail } from '../../developers/email.js';
import type { IssuedLink } from '../../developers/one-time-link.js';
import type { AppRole } from '../../developers/roles.js';
import type { AppMembership } from '../../developers/store.js';
import { appNotFound } from '../../error-catalogue.js';
import { isTesseraError } from '../../errors.js';
import { serviceBaseUrl } from '../base-url.js';
import { html } from '../html.js';
import { alert, csrfField, page } from '../layout.js';
import { formField, type AppParams, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf } from '../respond.js';
import { utcDay } from '../time.js';
import { appHeader } from './common/app-header.js';

type MemberParams = { Params: { appId: string; developerId: string } };
type InvitationParams = { Params: { appId: string; invitationId: string } };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * An app's people: the owner and the collaborators. The owner invites (a one-time link shown once,
 * to pass on by hand) and removes collaborators; a collaborator may leave. Every action asks the
 * domain first (`members.authorize`), on the POST as on the GET.
 */
export const peoplePages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, credentials, publicUrl }) => {
  app.addHook('preHandler', requireSession);

  app.get<AppParams>('/apps/:appId/people', async (request, reply) => {
    const { developer } = sessionOf(request);
    const role = await members.authorize(request.params.appId, developer.id, 'view_app');
    const withdrawn = (request.query as { done?: unknown }).done === 'withdrawn';
    const described = await apps.show(request.params.appId, asDeveloper(request));
    return sendPage(reply, await peoplePage(request, reply, { role, described, withdrawn }));
  });

  app.post<AppParams>('/apps/:appId/people/invitations', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId } = request.params;
    const role = await members.authorize(appId, developer.id, 'manage_collaborators');
    const described = await apps.show(appId, asDeveloper(request));
    const email = formField(request, 'email') ?? '';
    let invitation: IssuedLink;
    try {
      invitation = await members.invite(appId, email, asDeveloper(request));
    } catch (error) {
      if (!isTesseraError(error) || (error.status !== 400 && error.code !== 'TOO_MANY_REQUESTS')) throw error;
      if (error.details.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.details.retryAfterSeconds));
      return sendPage(reply, await peoplePage(request, reply, { role, described, email, message: error.message }), error.status);
    }
    const link = invitation.url ?? `${serviceBaseUrl(request, publicUrl)}${invitation.path}`;
    return sendPage(
      reply,
      await peoplePage(request, reply, {
        role,
        described,
        invited: { email: normaliseEmail(email) ?? email, link, expiresAt: invitation.expiresAt },
      }),
    );
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
    await members.authorize(appId, developer.id, developerId === developer.id ? 'view_app' : 'manage_collaborators');
    const member = await collaborator(request, appId, developerId);
    const described = await apps.show(appId, asDeveloper(request));
    const leaving = developerId === developer.id;
    const theirs = (await credentials.list(appId, asDeveloper(request))).filter(
      (credential) => credential.createdBy === 'developer' && credential.createdByDeveloperId === developerId,
    );
    const csrfToken = reply.generateCsrf();
    return sendPage(
      reply,
      page({
        title: leaving ? `Leave ${described.name}` : `Remove ${member.email}`,
        developer,
        csrfToken,
        body: html`${appHeader(appId, described.name, 'People')}
<section class="narrow confirm">
<h2>${leaving ? 'Leave this app?' : `Remove ${member.email}?`}</h2>
<p>${
          leaving
            ? 'You will no longer see this app or its keys. Only a new invitation from its owner brings you back.'
            : html`<strong>${member.email}</strong> will no longer see this app or its keys. Keys they copied keep working: rotate the ClientSecret if they had it.`
        }</p>
${
  theirs.length === 0
    ? null
    : html`<p class="alert" data-revoked-with-member="${theirs.length}">${leaving ? 'The credentials you made' : 'The credentials they made'} for this app are revoked with ${leaving ? 'your membership' : 'theirs'}, since ${leaving ? 'you' : 'they'} saw their secrets: ${theirs.map((credential, index) => html`${index === 0 ? '' : ', '}<strong>${credential.name}</strong> (<code>${credential.clientId}</code>)`)}, with every admin token issued from them, and any credential their tokens made. Make new ones for the server code that uses them first.</p>`
}
<form method="post" action="/portal/apps/${appId}/people/${developerId}/remove" class="actions">
  ${csrfField(csrfToken)}
  <button type="submit" class="danger">${leaving ? 'Leave the app' : 'Remove the collaborator'}</button>
  <a href="/portal/apps/${appId}/people">Cancel</a>
</form>
</section>`,
      }),
    );
  });

  app.post<MemberParams>('/apps/:appId/people/:developerId/remove', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId, developerId } = request.params;
    const leaving = developerId === developer.id;
    await members.authorize(appId, developer.id, leaving ? 'view_app' : 'manage_collaborators');
    await collaborator(request, appId, developerId);
    await members.removeCollaborator(appId, developerId, asDeveloper(request));
    return seeOther(reply, leaving ? '/portal/' : `/portal/apps/${appId}/people`);
  });

  /** The collaborator `developerId` of the app; 404 for anyone else (the owner is not removed this way). */
  async function collaborator(request: FastifyRequest, appId: string, developerId: string): Promise<AppMembership> {
    const member = UUID.test(developerId)
      ? (await members.membersOf(appId, asDeveloper(request))).find((one) => one.developerId === developerId)
      : undefined;
    if (member === undefined || member.role !== 'collaborator') throw appNotFound();
    return member;
  }

  interface PeopleInput {
    role: AppRole;
    described: AppDescription;
    /** What was typed in the invite form, kept after a mistake. */
    email?: string;
    message?: string;
    /** An invitation just made: its link, shown this once. */
    invited?: { email: string; link: string; expiresAt: string };
    /** An invitation was just withdrawn. */
    withdrawn?: boolean;
  }

  async function peoplePage(
    request: FastifyRequest,
    reply: FastifyReply,
    { role, described, email, message, invited, withdrawn }: PeopleInput,
  ) {
    const { developer } = sessionOf(request);
    const context = asDeveloper(request);
    const people = await members.membersOf(described.appId, context);
    const csrfToken = reply.generateCsrf();
    const owner = role === 'owner';
    const pending = owner ? await members.pendingInvitations(described.appId, context) : [];
    return page({
      title: `People · ${described.name}`,
      developer,
      csrfToken,
      body: html`${appHeader(described.appId, described.name, 'People')}
${withdrawn === true ? html`<p class="notice success" role="status">The invitation is withdrawn: its link no longer works.</p>` : null}
${
  invited === undefined
    ? null
    : html`<div class="notice invitation" role="status">
  <p>Invitation for <strong>${invited.email}</strong>. Copy this link now and pass it on: it is shown only this once, works once, and expires <span class="nowrap">${utcDay(invited.expiresAt)}</span>. Only someone signed in as ${invited.email} can accept it.</p>
  <p class="link-box"><code data-copyable data-invitation-link>${invited.link}</code></p>
</div>`
}
<table class="people">
  <caption>Who can see this app and its keys</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th>${owner ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : null}</tr></thead>
  <tbody>
  ${people.map(
    (person) => html`<tr>
    <td data-label="Email">${person.email}${person.developerId === developer.id ? html` <span class="meta">(you)</span>` : null}</td>
    <td data-label="Role">${person.role}</td>
    <td data-label="Since">${utcDay(person.addedAt)}</td>
    ${
      owner
        ? html`<td>${
            person.role === 'collaborator'
              ? html`<a href="/portal/apps/${described.appId}/people/${person.developerId}/remove" aria-label="Remove ${person.email}">Remove</a>`
              : null
          }</td>`
        : null
    }
  </tr>`,
  )}
  </tbody>
</table>
${
  pending.length === 0
    ? null
    : html`<table class="people pending">
  <caption>Invited, not yet accepted</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Invited</th><th scope="col">Link expires</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${pending.map(
    (invitation) => html`<tr>
    <td data-label="Email">${invitation.email}</td>
    <td data-label="Invited">${utcDay(invitation.createdAt)}</td>
    <td data-label="Expires">${utcDay(invitation.expiresAt)}</td>
    <td><form method="post" action="/portal/apps/${described.appId}/people/invitations/${invitation.id}/withdraw" class="inline">
      ${csrfField(csrfToken)}
      <button type="submit" class="link" aria-label="Withdraw the invitation for ${invitation.email}">Withdraw</button>
    </form></td>
  </tr>`,
  )}
  </tbody>
</table>`
}
${
  owner
    ? html`<section class="narrow">
<h2>Invite a collaborator</h2>
<p class="hint">A collaborator sees the app and its keys (never the ClientSecret), changes its token settings, revokes tokens and manages its credentials (without giving <code>credentials:manage</code>); only you rotate the ClientSecret, delete the app and manage its people.</p>
${alert(message)}
<form method="post" action="/portal/apps/${described.appId}/people/invitations" class="stack">
  ${csrfField(csrfToken)}
  <label for="invite-email">Email</label>
  <input id="invite-email" name="email" type="email" required maxlength="254" autocomplete="off" value="${email ?? ''}" aria-describedby="invite-hint"${message === undefined ? null : html` autofocus`}>
  <p class="hint field-hint" id="invite-hint">You get a link to pass on (there is no mail): the person signs in with this address and accepts.</p>
  <button type="submit">Invite</button>
</form>
</section>`
    : html`<p class="hint">Only the app's owner invites and removes people.</p>
<p><a href="/portal/apps/${described.appId}/people/${developer.id}/remove">Leave this app</a></p>`
}`,
    });
  }
};
