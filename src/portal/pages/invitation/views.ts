import type { Invitation } from '../../../apps/members.js';
import { html, type Html } from '../../html.js';
import { csrfField, page, type PageFrame, type SignedInFrame } from '../../layout.js';
import { utcDay } from '../../time.js';

// The invitation pages: pure functions of the invitation and the developer, to HTML.

/** The invitation, for the developer it is for: which app, and "Accept invitation" with its token. */
export function invitationPage(frame: SignedInFrame, token: string, invitation: Invitation): Html {
  const { csrfToken } = frame;
  const { appName } = invitation;
  return page({
    title: 'Invitation',
    ...frame,
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
  });
}

/** An invitation that does not work, and what to do instead. */
export function notUsable(frame: PageFrame): Html {
  return page({
    title: 'Invitation not valid',
    ...frame,
    body: html`<section class="narrow">
<h1>This invitation does not work</h1>
<p>It was used already, replaced by a newer invitation, or has expired (invitations work for 7 days), or the link was not copied whole.</p>
<p>Ask the app's owner for a new invitation.</p>
<p><a href="/portal/">Back to your apps</a></p>
</section>`,
  });
}

/** An invitation for another address than the developer's, and what to do. */
export function otherAddress(frame: SignedInFrame, invited: string, appName: string): Html {
  const { developer } = frame;
  return page({
    title: 'Invitation for another address',
    ...frame,
    body: html`<section class="narrow">
<h1>This invitation is for another address</h1>
<p>The invitation to <strong>${appName}</strong> is for <strong>${invited}</strong>, and you are signed in as <strong>${developer.email}</strong>. Only the account with that address can accept it.</p>
<p>Sign out (at the top of the page), then open the link again and sign in as ${invited}; or ask the app's owner to invite ${developer.email} instead.</p>
</section>`,
  });
}
