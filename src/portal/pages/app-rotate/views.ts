import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { RotatedSecret } from '../../../apps/service.js';
import { permissionsOf } from '../../../developers/roles.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField, onceField, page, type PageFrame } from '../../layout.js';
import { utcTime } from '../../time.js';
import { appHeader } from '../common/app-header.js';
import {
  endedNotice,
  endPreviousSecretForm,
  graceFieldset,
  replacedSecretOutcome,
  rotatedSecretKeys,
  rotationOutcome,
} from '../common/rotation.js';
import type { RotationForm } from './form.js';

// The ClientSecret's rotation pages: pure functions of the app and the form, to HTML.

/** Only the owner reaches these pages (`rotate_secret`). */
const OWNER = permissionsOf('owner');

/** The rotation form, with what was typed and what was wrong with it, and the end of a grace period still running. */
export function rotationPage(
  frame: PageFrame,
  once: string,
  app: AppDescription,
  now: number,
  form: RotationForm,
  message?: string,
  ended?: unknown,
): Html {
  const { csrfToken } = frame;
  return page({
    title: `Rotate the ClientSecret of ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Overview', OWNER)}
<section class="app-form">
<h2>Rotate the ClientSecret</h2>
${endedNotice(ended)}
<p>A new ClientSecret replaces the current one, and is shown once. Server code that gets admin tokens needs the new one.</p>
${
  app.previousSecretValidUntil === null || Date.parse(app.previousSecretValidUntil) <= now
    ? null
    : html`${endPreviousSecretForm(`/portal/apps/${app.appId}/end-previous-secret`, csrfToken, app.previousSecretValidUntil, 'ClientSecret')}
<p class="alert">Rotating again also makes the previous ClientSecret stop at once: first make sure that no server uses it any more.</p>`
}
${alert(message)}
<form method="post" action="/portal/apps/${app.appId}/rotate-secret" class="stack">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  ${graceFieldset(form, 'ClientSecret', 'A grace period leaves time to deploy the new secret to your servers. For a secret that leaked, choose "It stops at once".')}
  <div class="choice">
    <input type="checkbox" id="revoke-admin-tokens" name="revokeAdminTokens" value="yes"${form.revokeAdminTokens ? html` checked` : null} aria-describedby="revoke-admin-tokens-hint">
    <label for="revoke-admin-tokens">Also revoke every admin token</label>
  </div>
  <p class="hint" id="revoke-admin-tokens-hint">For a secret that leaked: admin tokens already issued stop working too. Not with a grace period, since a leaked secret must stop at once.</p>
  <label for="confirm-client-id">Type the ClientID to confirm</label>
  <p class="hint" id="confirm-client-id-hint">It is <code>${app.clientId}</code>.</p>
  <input type="text" id="confirm-client-id" name="clientId" required maxlength="200" autocomplete="off" spellcheck="false" autocapitalize="off" value="${form.clientId}" aria-describedby="confirm-client-id-hint">
  <div class="buttons">
    <button type="submit" class="danger">Rotate ClientSecret</button>
    <a href="/portal/apps/${app.appId}">Cancel</a>
  </div>
</form>
</section>`,
  });
}

/** The new ClientSecret, shown this once, and what became of the previous one and of the admin tokens. */
export function rotatedPage(frame: PageFrame, app: AppDescription, rotated: RotatedSecret, revokedAdminTokens: boolean): Html {
  return page({
    title: `New ClientSecret of ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Overview', OWNER)}
<h2>New ClientSecret</h2>
<p class="notice" role="status">The ClientSecret is rotated. Copy the new one now: it is shown only this once, and belongs in your server's configuration, never in a web page or a mobile app.</p>
${rotatedSecretKeys(rotated)}
${rotationOutcome([
  replacedSecretOutcome(rotated.previousSecretValidUntil, 'ClientSecret'),
  rotated.endedEarlierSecretValidUntil === null
    ? null
    : html`The secret before it, which an earlier rotation kept working until ${utcTime(rotated.endedEarlierSecretValidUntil, 'second')}, stopped working: only one previous secret is kept.`,
  revokedAdminTokens ? html`Admin tokens revoked: ${rotated.adminTokensRevoked}.` : null,
])}
<p><a class="button" href="/portal/apps/${app.appId}">Back to the app</a></p>`,
  });
}
