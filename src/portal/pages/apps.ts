import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_APP_NAME_LENGTH } from '../../apps/app.js';
import type { OwnedApp } from '../../apps/owned-apps.js';
import { isTesseraError } from '../../errors.js';
import type { SecretExposure } from '../../apps/secret-exposure.js';
import type { AppAttention } from '../../apps/attention.js';
import type { AppRole } from '../../developers/roles.js';
import { fieldText } from '../event-view.js';
import { html, type Html } from '../html.js';
import { utcTime } from '../time.js';
import { alert, csrfField, onceField, page } from '../layout.js';
import { issueOnce, useOnce } from '../once.js';
import { formField, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, sendPage, sessionOf } from '../respond.js';
import { serviceBaseUrl } from '../base-url.js';
import { keyRow } from './common/keys.js';
import { quickstarts } from './common/quickstarts.js';

/** The developer's apps, and a new one. */
export const appsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, ownedApps, publicUrl, secureCookies }) => {
  const once = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  app.get<{ Querystring: { done?: string } }>('/', async (request, reply) => {
    const { developer } = sessionOf(request);
    const deleted = request.query.done === 'deleted';
    const memberships = await members.appsOf(developer.id);
    const context = asDeveloper(request);
    const described = await Promise.all(
      memberships.map(async (membership) => {
        const [app, attention] = await Promise.all([apps.show(membership.appId, context), events.attention(membership.appId, context)]);
        return { membership, app, attention };
      }),
    );
    const needingAttention = described.filter(({ attention }) => flagsOf(attention) > 0).length;
    const csrfToken = reply.generateCsrf();
    return sendPage(
      reply,
      page({
        title: 'Your apps',
        developer,
        csrfToken,
        body: html`<div class="heading-row">
  <h1>Your apps</h1>
  <a class="button" href="/portal/apps/new">New app</a>
</div>
${deleted ? html`<p class="notice success" role="status">The app is deleted, with its keys, tokens and events.</p>` : null}
${needingAttention === 0 ? null : html`<p class="alert">${needingAttention === 1 ? 'One of your apps needs' : `${needingAttention} of your apps need`} attention: see the flags below.</p>`}
${
  described.length === 0
    ? html`<p class="empty">You have no app yet. Create one: it gets its four keys at once.</p>`
    : html`<ul class="cards">${described.map(
        ({ membership, app: described, attention }) => html`<li${flagsOf(attention) > 0 ? html` class="flagged"` : null}>
    <a href="/portal/apps/${described.appId}"><strong>${described.name}</strong></a>
    <span class="meta">AppID <code>${described.appId}</code> · ${membership.role === 'owner' ? 'owner' : 'collaborator'}</span>
    ${attentionFlags(described.appId, attention, membership.role)}
  </li>`,
      )}</ul>`
}`,
      }),
    );
  });

  app.get('/apps/new', async (request, reply) => sendPage(reply, newAppForm(request, reply, issueOnce(reply, once))));

  app.post('/apps', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { developer } = sessionOf(request);
    const sent = useOnce(request, reply, once);
    const name = formField(request, 'name') ?? '';
    let created: OwnedApp;
    try {
      created = await ownedApps.create(name, developer.email, asDeveloper(request), { once: sent });
    } catch (error) {
      // A mistake in the form, or a limit reached: the form again, with what was typed and why.
      if (!isTesseraError(error) || (error.status !== 400 && error.code !== 'APP_LIMIT_REACHED' && error.code !== 'TOO_MANY_REQUESTS'))
        throw error;
      if (error.details.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.details.retryAfterSeconds));
      return sendPage(reply, newAppForm(request, reply, issueOnce(reply, once), { name, message: error.message }), error.status);
    }
    return sendPage(reply, createdPage(request, reply, created, publicUrl), 201);
  });
};

function flagsOf({ leakedSecrets, refusalBurst, refusedElsewhere }: AppAttention): number {
  return leakedSecrets.length + refusedElsewhere.length + (refusalBurst === null ? 0 : 1);
}

/**
 * An app's flags in the list: its ClientSecret leaked into a web page (to the overview, which says
 * what happened and leads to rotation), a burst of token requests refused for their keys in the last hour (to that
 * minute's events).
 */
function attentionFlags(appId: string, { leakedSecrets, refusalBurst, refusedElsewhere }: AppAttention, role: AppRole): Html | null {
  if (leakedSecrets.length === 0 && refusalBurst === null && refusedElsewhere.length === 0) return null;
  const minute = refusalBurst === null ? 0 : Date.parse(refusalBurst.minute);
  return html`<ul class="flags">
    ${leakedSecrets.map((leaked) => leakedSecretFlag(appId, leaked, role))}
    ${refusedElsewhere.map(
      (refused) =>
        html`<li data-flag="refused-elsewhere" data-client-id="${refused.clientId}"><a href="/portal/apps/${appId}/events?${new URLSearchParams({ type: 'credential.refused', range: '1h' }).toString()}">The credential <q>${refused.name}</q>'s right secret was sent from ${refused.clientAddress ?? 'an address'}, which it does not allow</a>, ${utcTime(refused.at, 'minute')}: its secret may have leaked; revoke it, or rotate it if its service moved.</li>`,
    )}
    ${
      refusalBurst === null
        ? null
        : html`<li data-flag="refusal-burst"><a href="/portal/apps/${appId}/events?${new URLSearchParams({ range: 'custom', from: fieldText(minute), to: fieldText(minute + 60_000) }).toString()}">${refusalBurst.refused} token requests refused in one minute</a>${refusalBurst.throttled === 0 ? null : ` (${refusalBurst.throttled} throttled)`}, ${utcTime(refusalBurst.minute, 'minute')}: wrong ClientSecrets or AppKeys, someone guessing or a deployment with an old secret.</li>`
    }
  </ul>`;
}

/** A secret of the app sent from a web page that still works: whose, when, and what ends it. */
function leakedSecretFlag(appId: string, leaked: SecretExposure, role: AppRole): Html {
  const { credential } = leaked;
  const what = credential === null ? 'ClientSecret' : html`The credential <q>${credential.name}</q>'s ClientSecret`;
  const toDo =
    leaked.worksUntil !== null
      ? html`rotated with a grace period, it works until ${utcTime(leaked.worksUntil, 'minute')}: ${credential === null && role !== 'owner' ? 'ask the owner to end it now' : 'end it now'}`
      : credential !== null
        ? 'revoke the credential or rotate its secret'
        : role === 'owner'
          ? 'rotate it'
          : 'ask the owner to rotate it';
  return html`<li data-flag="leaked-secret" data-client-id="${credential?.clientId ?? ''}"><a href="/portal/apps/${appId}">${what} leaked into a web page</a> on ${utcTime(leaked.lastExposedAt, 'minute')}: ${toDo}.</li>`;
}

function newAppForm(
  request: FastifyRequest,
  reply: FastifyReply,
  once: string,
  { name, message }: { name?: string; message?: string } = {},
) {
  const csrfToken = reply.generateCsrf();
  return page({
    title: 'New app',
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`<section class="narrow">
<h1>New app</h1>
${alert(message)}
<form method="post" action="/portal/apps" class="stack">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  <label for="name">Name</label>
  <input id="name" name="name" type="text" required maxlength="${MAX_APP_NAME_LENGTH}" autocomplete="off" value="${name ?? ''}" autofocus aria-describedby="name-hint">
  <p class="hint" id="name-hint">For you and your collaborators; it can be anything.</p>
  <button type="submit">Create app</button>
</form>
</section>`,
  });
}

function createdPage(request: FastifyRequest, reply: FastifyReply, created: OwnedApp, publicUrl: string | undefined) {
  const csrfToken = reply.generateCsrf();
  return page({
    title: created.name,
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`<h1>${created.name}</h1>
<p class="notice" role="status">Your app is ready. Copy the ClientSecret now: it is shown only this once, and belongs in your server's configuration, never in a web page or a mobile app.</p>
<dl class="keys">
  ${keyRow('AppID', 'appId', created.appId, 'Public: names the app in every request.')}
  ${keyRow('AppKey', 'appKey', created.appKey, 'Public: goes into client apps, for anonymous tokens.')}
  ${keyRow('ClientID', 'clientId', created.clientId, 'With the ClientSecret, gets admin tokens from server code.')}
  ${keyRow('ClientSecret', 'clientSecret', created.clientSecret, 'Secret: server code only. Shown once.')}
</dl>
${quickstarts({
  values: { baseUrl: serviceBaseUrl(request, publicUrl), appId: created.appId, appKey: created.appKey, clientId: created.clientId },
  allowedOrigins: [], // a new app allows none
  csrfToken,
  keepThisPage: true,
})}
<p><a class="button" href="/portal/apps/${created.appId}">Go to the app's page</a></p>`,
  });
}
