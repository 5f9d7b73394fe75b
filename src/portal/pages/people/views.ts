import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { PendingInvitation } from '../../../apps/members.js';
import type { CredentialDescription } from 'tessera-tokens/internal/credentials/credential.js';
import type { AppPermissions } from '../../../developers/roles.js';
import type { AppMembership } from '../../../developers/store.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type PageFrame, type SignedInFrame } from '../../layout.js';
import { utcDay } from '../../time.js';
import { appHeader } from '../common/app-header.js';

// An app's people pages: pure functions of what the handlers read, to HTML.

export interface PeopleInput {
  described: AppDescription;
  permissions: AppPermissions;
  people: readonly AppMembership[];
  /** The invitations not yet accepted, for whom may manage the app's people; none for the others. */
  pending: readonly PendingInvitation[];
  /** What was typed in the invite form, kept after a mistake. */
  email?: string;
  message?: string;
  /** An invitation just made: its link, shown this once. */
  /** `mailed`: the link was mailed to the address too (`SMTP_URL`). */
  invited?: { email: string; link: string; expiresAt: string; mailed?: boolean };
  /** An invitation was just withdrawn. */
  withdrawn?: boolean;
}

/** The app's members, its pending invitations and the invite form (for whom may invite), or the way to leave. */
export function peoplePage(frame: SignedInFrame, input: PeopleInput): Html {
  const { described, permissions, people, pending, email, message, invited, withdrawn } = input;
  const { csrfToken, developer } = frame;
  const owner = permissions.may.manage_collaborators;
  return page({
    title: `People · ${described.name}`,
    ...frame,
    body: html`${appHeader(described.appId, described.name, 'People', permissions)}
${withdrawn === true ? html`<p class="notice success" role="status">The invitation is withdrawn: its link no longer works.</p>` : null}
${
  invited === undefined
    ? null
    : html`<div class="notice invitation" role="status">
  ${
    invited.mailed === true
      ? html`<p>Invitation for <strong>${invited.email}</strong>, mailed to that address. Its link is shown here only this once, if you would rather pass it on yourself: it works once, and expires <span class="nowrap">${utcDay(invited.expiresAt)}</span>. Only someone signed in as ${invited.email} can accept it.</p>`
      : html`<p>Invitation for <strong>${invited.email}</strong>. Copy this link now and pass it on: it is shown only this once, works once, and expires <span class="nowrap">${utcDay(invited.expiresAt)}</span>. Only someone signed in as ${invited.email} can accept it.</p>`
  }
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

export interface RemovalInput {
  appId: string;
  permissions: AppPermissions;
  described: AppDescription;
  member: AppMembership;
  /** The developer removes itself. */
  leaving: boolean;
  /** The credentials the member made, revoked with its membership. */
  theirs: readonly CredentialDescription[];
}

/** Without JavaScript there is no confirm(): removing and leaving each get a page that asks first. */
export function removalPage(frame: PageFrame, { appId, permissions, described, member, leaving, theirs }: RemovalInput): Html {
  const { csrfToken } = frame;
  return page({
    title: leaving ? `Leave ${described.name}` : `Remove ${member.email}`,
    ...frame,
    body: html`${appHeader(appId, described.name, 'People', permissions)}
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
<form method="post" action="/portal/apps/${appId}/people/${member.developerId}/remove" class="actions">
  ${csrfField(csrfToken)}
  <button type="submit" class="danger">${leaving ? 'Leave the app' : 'Remove the collaborator'}</button>
  <a href="/portal/apps/${appId}/people">Cancel</a>
</form>
</section>`,
  });
}
