import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type PageFrame } from '../../layout.js';

// "Forgot your password?": pure functions of what the page is to show, to HTML.

/** The form that asks for a reset link, with the email typed and why it was refused, if it was. */
export function forgotPasswordForm(frame: PageFrame, { email, message }: { email?: string; message?: string } = {}): Html {
  return page({
    title: 'Forgot your password?',
    ...frame,
    body: html`<section class="narrow">
<h1>Forgot your password?</h1>
<p class="lead">Type the email address of your account: a link that sets a new password is mailed to it.</p>
${alert(message)}
<form method="post" action="/portal/forgot-password" class="stack">
  ${csrfField(frame.csrfToken)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${email ?? ''}" autofocus>
  <button type="submit">Mail me a link</button>
</form>
<p class="hint">Remembered it? <a href="/portal/sign-in">Sign in</a>.</p>
</section>`,
  });
}

/** The same answer whether or not the address has an account: what it cannot tell is not told. */
export function linkMailed(frame: PageFrame, email: string): Html {
  return page({
    title: 'Check your mail',
    ...frame,
    body: html`<section class="narrow">
<h1>Check your mail</h1>
<p class="notice success" role="status">If <strong>${email}</strong> is the address of an account here, a link that sets a new password is on its way to it.</p>
<p>The link works once, for a day; only the newest one works. No mail within a few minutes? Look in the spam folder, then <a href="/portal/forgot-password">ask again</a>, or ask the operator of this service.</p>
<p><a href="/portal/sign-in">Back to sign-in</a></p>
</section>`,
  });
}
