import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDescription } from '../../apps/app.js';
import type { RotatedSecret, RotationOptions } from '../../apps/service.js';
import { TesseraError } from '../../errors.js';
import { html } from '../html.js';
import { alert, csrfField, onceField, page } from '../layout.js';
import { issueOnce, useOnce } from '../once.js';
import { formField, type AppParams, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf } from '../respond.js';
import { utcTime } from '../time.js';
import { mistakeIn } from './common/mistakes.js';
import { appHeader } from './common/app-header.js';
import {
  endedNotice,
  endPreviousSecretForm,
  graceFieldset,
  graceSecondsOf,
  replacedSecretOutcome,
  rotatedSecretKeys,
  rotationOutcome,
} from './common/rotation.js';

/** What the form had, to show it again after a mistake (never a secret: the form has none). */
interface RotationForm {
  grace: string;
  graceSeconds: string;
  revokeAdminTokens: boolean;
  clientId: string;
}

/** A grace period is preselected: stopping at once is for a secret that leaked, and is a choice to make, not a default. */
const EMPTY_FORM: RotationForm = { grace: '3600', graceSeconds: '', revokeAdminTokens: false, clientId: '' };

/**
 * Rotating the ClientSecret (the owner only): a form confirmed by typing the ClientID, then the new
 * secret, shown once.
 */
export const appRotatePages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, secureCookies, clock }) => {
  const once = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  app.get<AppParams & { Querystring: { ended?: unknown } }>('/apps/:appId/rotate-secret', async (request, reply) => {
    const { appId } = request.params;
    await members.authorize(appId, sessionOf(request).developer.id, 'rotate_secret');
    const described = await apps.show(appId, asDeveloper(request));
    return sendPage(
      reply,
      rotationPage(request, reply, issueOnce(reply, once), described, clock.now(), EMPTY_FORM, undefined, request.query.ended),
    );
  });

  app.post<AppParams>('/apps/:appId/end-previous-secret', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    await members.authorize(appId, sessionOf(request).developer.id, 'rotate_secret');
    const { endedPreviousSecretValidUntil } = await apps.endPreviousSecret(appId, asDeveloper(request));
    return seeOther(reply, `/portal/apps/${appId}/rotate-secret?ended=${endedPreviousSecretValidUntil === null ? 'none' : 'yes'}`);
  });

  app.post<AppParams>('/apps/:appId/rotate-secret', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    await members.authorize(appId, sessionOf(request).developer.id, 'rotate_secret');
    const sent = useOnce(request, reply, once);
    const described = await apps.show(appId, asDeveloper(request));
    const form: RotationForm = {
      grace: formField(request, 'grace') ?? 'none',
      graceSeconds: (formField(request, 'graceSeconds') ?? '').trim().slice(0, 20),
      revokeAdminTokens: formField(request, 'revokeAdminTokens') === 'yes',
      clientId: (formField(request, 'clientId') ?? '').trim().slice(0, 200),
    };
    let rotated: RotatedSecret;
    try {
      if (form.clientId !== described.clientId) {
        throw new TesseraError(
          'invalid_request',
          'That is not the ClientID of this app: type it exactly as shown, to confirm that you mean this app.',
        );
      }
      rotated = await apps.rotateSecret(appId, { ...rotationOptions(form), once: sent }, asDeveloper(request));
    } catch (error) {
      return sendPage(reply, rotationPage(request, reply, issueOnce(reply, once), described, clock.now(), form, mistakeIn(error)), 400);
    }
    return sendPage(reply, rotatedPage(request, reply, described, rotated, form.revokeAdminTokens));
  });
};

function rotationOptions(form: RotationForm): RotationOptions {
  const graceSeconds = graceSecondsOf(form, 'ClientSecret');
  return graceSeconds === undefined
    ? { revokeAdminTokens: form.revokeAdminTokens }
    : { revokeAdminTokens: form.revokeAdminTokens, graceSeconds };
}

function rotationPage(
  request: FastifyRequest,
  reply: FastifyReply,
  once: string,
  app: AppDescription,
  now: number,
  form: RotationForm,
  message?: string,
  ended?: unknown,
) {
  const csrfToken = reply.generateCsrf();
  return page({
    title: `Rotate the ClientSecret of ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`${appHeader(app.appId, app.name, 'Overview')}
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

function rotatedPage(
  request: FastifyRequest,
  reply: FastifyReply,
  app: AppDescription,
  rotated: RotatedSecret,
  revokedAdminTokens: boolean,
) {
  return page({
    title: `New ClientSecret of ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken: reply.generateCsrf(),
    body: html`${appHeader(app.appId, app.name, 'Overview')}
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
