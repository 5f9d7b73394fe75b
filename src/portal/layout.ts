import type { DeveloperRecord } from '../developers/developer.js';
import { html, type Html } from './html.js';

/** What frames every page, whatever its own data: the developer signed in, and the page's form token. */
export interface PageFrame {
  /** The developer signed in, for the header (email, "Sign out"); none on the sign-in pages. */
  developer?: DeveloperRecord | undefined;
  /** The form token of this page, for the "Sign out" form and the page's own forms. */
  csrfToken: string;
  /** Whether to ask the developer to confirm their address (mail is sent, and it is not confirmed yet). */
  confirmEmail?: boolean | undefined;
}

/** The frame of a signed-in developer's page. */
export interface SignedInFrame extends PageFrame {
  developer: DeveloperRecord;
}

export interface PageInput extends PageFrame {
  title: string;
  body: Html;
}

/**
 * Every page: one stylesheet, one module script and an icon (so that browsers do not ask for a
 * `/favicon.ico` there is none of), all from the portal's own origin (the
 * Content-Security-Policy allows nothing else), a header with the developer and "Sign out", and
 * the page in `<main>`. The script only enhances: every form works without it.
 */
export function page({ title, developer, csrfToken, confirmEmail, body }: PageInput): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Tessera</title>
<link rel="icon" href="/portal/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/portal/assets/portal.css">
<script type="module" src="/portal/assets/portal.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
<header class="top">
  <a class="brand" href="/portal/">Tessera</a>
  ${
    developer === undefined
      ? null
      : html`<nav aria-label="Account">
    <span class="who">${developer.email}</span>
    <a href="/portal/account">Account</a>
    <form method="post" action="/portal/sign-out" class="inline">
      <input type="hidden" name="_csrf" value="${csrfToken}">
      <button type="submit" class="link">Sign out</button>
    </form>
  </nav>`
  }
</header>
<main id="main">
${developer !== undefined && confirmEmail === true ? confirmEmailBanner(developer.email, csrfToken) : null}
${body}
</main>
</body>
</html>
`;
}

/** Until the developer follows the link mailed at sign-up: what it is for, and a way to have it mailed again. */
function confirmEmailBanner(email: string, csrfToken: string): Html {
  return html`<div class="notice banner" role="status" data-confirm-email>
  <p>Confirm your email address: open the link mailed to <strong>${email}</strong>. Until then, no alert about your apps is mailed to you.</p>
  <form method="post" action="/portal/account/confirm-email" class="inline">
    <input type="hidden" name="_csrf" value="${csrfToken}">
    <button type="submit" class="link">Mail the link again</button>
  </form>
</div>`;
}

/** A message above a form: what went wrong, read out by screen readers as it appears. */
export function alert(message: string | undefined): Html | null {
  return message === undefined ? null : html`<p class="alert" role="alert">${message}</p>`;
}

/** The form token field every form carries. */
export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

/** The field of a form that may be sent once only (`single-use-forms.ts`). */
export function onceField(value: string): Html {
  return html`<input type="hidden" name="once" value="${value}">`;
}
