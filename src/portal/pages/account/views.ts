import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type SignedInFrame } from '../../layout.js';
import { utcDay } from '../../time.js';
import { newPasswordFields, PASSWORD_INPUT_MAX_LENGTH } from '../common/new-password.js';

// The account page: a pure function of the developer and what the form left, to HTML.

/** The developer's account and the change-password form, with what went wrong or what changed. */
export function accountPage(
  frame: SignedInFrame,
  { message, changed = false, mailed = false }: { message?: string; changed?: boolean; mailed?: boolean },
): Html {
  const { developer, csrfToken } = frame;
  return page({
    title: 'Your account',
    ...frame,
    body: html`<h1>Your account</h1>
${mailed ? html`<p class="notice success" role="status">A new confirmation link is on its way to ${developer.email}.</p>` : null}
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
