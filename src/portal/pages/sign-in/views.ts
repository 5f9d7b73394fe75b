import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type PageFrame } from '../../layout.js';
import { PASSWORD_INPUT_MAX_LENGTH } from '../common/new-password.js';

// The sign-in page: a pure function of what it is to show, to HTML.

/** The sign-in form, with the email typed and why it was refused, if it was; sign-up's link where the operator allows it. */
export function signInForm(
  frame: PageFrame,
  {
    next,
    email,
    message,
    signup,
    signedOut = false,
    mails = false,
  }: {
    next?: string | undefined;
    email?: string;
    message?: string;
    signup?: 'open' | 'invite' | undefined;
    signedOut?: boolean;
    /** A mail server is set: "Forgot your password?" mails a link. */
    mails?: boolean;
  },
): Html {
  return page({
    title: 'Sign in',
    ...frame,
    body: html`<section class="narrow">
<h1>Sign in</h1>
<p class="lead">The developer portal of Tessera: your apps and their keys.</p>
${signedOut ? html`<p class="notice success" role="status">You are signed out.</p>` : null}
${alert(message)}
<form method="post" action="/portal/sign-in" class="stack">
  ${csrfField(frame.csrfToken)}
  ${next === undefined ? null : html`<input type="hidden" name="next" value="${next}">`}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${email ?? ''}" ${email === undefined ? html`autofocus` : null}>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="${PASSWORD_INPUT_MAX_LENGTH}" ${email === undefined ? null : html`autofocus`}>
  <button type="submit">Sign in</button>
</form>
${mails ? html`<p><a href="/portal/forgot-password">Forgot your password?</a></p>` : null}
${signup === 'open' ? html`<p>No account yet? <a href="/portal/sign-up${next === undefined ? '' : `?next=${encodeURIComponent(next)}`}">Sign up</a>.</p>` : null}
${
  mails
    ? signup === 'open'
      ? null
      : html`<p class="hint">No account yet? Ask the operator of this service for one (<code>tessera developers create</code>).</p>`
    : signup === 'open'
      ? html`<p class="hint">Lost your password? The operator of this service can give you a link that sets a new one.</p>`
      : html`<p class="hint">No account yet? Ask the operator of this service for one (<code>tessera developers create</code>); they can also give you a link that sets a new password.</p>`
}
</section>`,
  });
}
