import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type PageFrame } from '../../layout.js';
import { newPasswordFields } from '../common/new-password.js';

// The pages of a password link: pure functions of the link's token and its developer, to HTML.

/** The form that sets the password of `email`'s account, with what was wrong, if anything. */
export function setPasswordForm(frame: PageFrame, token: string, email: string, message?: string): Html {
  const { csrfToken } = frame;
  return page({
    title: 'Set your password',
    ...frame,
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

/** A link that does not work, and what to do instead. */
export function notUsable(frame: PageFrame): Html {
  return page({
    title: 'Link not valid',
    ...frame,
    body: html`<section class="narrow">
<h1>This link does not work</h1>
<p>It was used already, replaced by a newer link, or has expired (a new account's link works for 7 days, a reset link for 1 day), or it was not copied whole.</p>
<p>Ask the operator of this service for a new one (<code>tessera developers reset-link EMAIL</code>), or <a href="/portal/sign-in">sign in</a> if you know your password.</p>
</section>`,
  });
}
