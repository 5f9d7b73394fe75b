import { html, type Html } from '../../html.js';
import { csrfField, page, type PageFrame } from '../../layout.js';

// The page of the link that confirms an address: pure functions of what it is to show, to HTML.

/** The link works: a button confirms (a mail scanner that opens the link confirms nothing). */
export function confirmForm(frame: PageFrame, token: string, email: string): Html {
  return page({
    title: 'Confirm your email address',
    ...frame,
    body: html`<section class="narrow">
<h1>Confirm your email address</h1>
<p class="lead">Is <strong>${email}</strong> your address? Confirm it, and alerts about your apps are mailed to it.</p>
<form method="post" action="/portal/confirm-email" class="stack">
  ${csrfField(frame.csrfToken)}
  <input type="hidden" name="token" value="${token}">
  <button type="submit">Confirm ${email}</button>
</form>
</section>`,
  });
}

export function confirmed(frame: PageFrame, email: string): Html {
  return page({
    title: 'Address confirmed',
    ...frame,
    body: html`<section class="narrow">
<h1>Address confirmed</h1>
<p class="notice success" role="status"><strong>${email}</strong> is confirmed: alerts about your apps are mailed to it (each app's page turns them off).</p>
<p><a href="/portal/">Go to your apps</a></p>
</section>`,
  });
}

export function notUsable(frame: PageFrame): Html {
  return page({
    title: 'Link not valid',
    ...frame,
    body: html`<section class="narrow">
<h1>This link does not work</h1>
<p>It has expired (a confirmation link works for 7 days), it is for an address the account no longer has, or it was not copied whole.</p>
<p><a href="/portal/sign-in">Sign in</a>: a banner at the top of each page mails a new link.</p>
</section>`,
  });
}
