import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type PageFrame } from '../../layout.js';
import { newPasswordFields } from '../common/new-password.js';

// The sign-up page: a pure function of what it is to show, to HTML.

/** The sign-up form, with the email typed and why it was refused, if it was. */
export function signUpForm(
  frame: PageFrame,
  { next, email, message }: { next?: string | undefined; email?: string; message?: string },
): Html {
  const { csrfToken } = frame;
  const signIn = next === undefined ? '/portal/sign-in' : `/portal/sign-in?next=${encodeURIComponent(next)}`;
  return page({
    title: 'Sign up',
    ...frame,
    body: html`<section class="narrow">
<h1>Sign up</h1>
<p class="lead">A developer account of this Tessera service: your apps and their keys.</p>
${alert(message)}
<form method="post" action="/portal/sign-up" class="stack">
  ${csrfField(csrfToken)}
  ${next === undefined ? null : html`<input type="hidden" name="next" value="${next}">`}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${email ?? ''}" ${email === undefined ? html`autofocus` : null}>
  ${newPasswordFields({ label: 'Password', repeatLabel: 'Repeat the password', autofocus: email !== undefined })}
  <button type="submit">Sign up</button>
</form>
<p class="hint">Have an account? <a href="${signIn}">Sign in</a>.</p>
</section>`,
  });
}
