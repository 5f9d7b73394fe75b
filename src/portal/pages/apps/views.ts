import { MAX_APP_NAME_LENGTH, type AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { AppAttention } from '../../../apps/attention.js';
import type { OwnedApp } from '../../../apps/owned-apps.js';
import type { SecretExposure } from '../../../apps/secret-exposure.js';
import { permissionsOf, type AppPermissions } from '../../../developers/roles.js';
import type { AppMembership } from '../../../developers/store.js';
import { fieldText } from '../events/form.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField, onceField, page, type PageFrame } from '../../layout.js';
import { utcTime } from '../../time.js';
import { keyRow } from '../common/access-keys.js';
import { quickstarts } from '../common/quickstarts.js';

// The developer's apps and a new one: pure functions of what the handlers read, to HTML.

/** One of the developer's apps, as the list shows it. */
export interface ListedApp {
  membership: AppMembership;
  app: AppDescription;
  attention: AppAttention;
}

/** The developer's apps, their flags, and the link to a new one. */
export function appsPage(frame: PageFrame, described: readonly ListedApp[], deleted: boolean): Html {
  const needingAttention = described.filter(({ attention }) => flagsOf(attention) > 0).length;
  return page({
    title: 'Your apps',
    ...frame,
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
    ${attentionFlags(described.appId, attention, permissionsOf(membership.role))}
  </li>`,
      )}</ul>`
}`,
  });
}

function flagsOf({ leakedSecrets, refusalBurst, refusedElsewhere }: AppAttention): number {
  return leakedSecrets.length + refusedElsewhere.length + (refusalBurst === null ? 0 : 1);
}

/**
 * An app's flags in the list: its ClientSecret leaked into a web page (to the overview, which says
 * what happened and leads to rotation), a burst of token requests refused for their keys in the last hour (to that
 * minute's events).
 */
function attentionFlags(
  appId: string,
  { leakedSecrets, refusalBurst, refusedElsewhere }: AppAttention,
  permissions: AppPermissions,
): Html | null {
  if (leakedSecrets.length === 0 && refusalBurst === null && refusedElsewhere.length === 0) return null;
  const minute = refusalBurst === null ? 0 : Date.parse(refusalBurst.minute);
  return html`<ul class="flags">
    ${leakedSecrets.map((leaked) => leakedSecretFlag(appId, leaked, permissions))}
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
function leakedSecretFlag(appId: string, leaked: SecretExposure, permissions: AppPermissions): Html {
  const { credential } = leaked;
  const what = credential === null ? 'ClientSecret' : html`The credential <q>${credential.name}</q>'s ClientSecret`;
  const toDo =
    leaked.worksUntil !== null
      ? html`rotated with a grace period, it works until ${utcTime(leaked.worksUntil, 'minute')}: ${credential === null && !permissions.may.rotate_secret ? 'ask the owner to end it now' : 'end it now'}`
      : credential !== null
        ? 'revoke the credential or rotate its secret'
        : permissions.may.rotate_secret
          ? 'rotate it'
          : 'ask the owner to rotate it';
  return html`<li data-flag="leaked-secret" data-client-id="${credential?.clientId ?? ''}"><a href="/portal/apps/${appId}">${what} leaked into a web page</a> on ${utcTime(leaked.lastExposedAt, 'minute')}: ${toDo}.</li>`;
}

/** The new-app form, with what was typed and why it was refused, if it was. */
export function newAppForm(frame: PageFrame, once: string, { name, message }: { name?: string; message?: string } = {}): Html {
  const { csrfToken } = frame;
  return page({
    title: 'New app',
    ...frame,
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

/** The new app, its ClientSecret shown this once, and the quickstarts with its keys at `baseUrl`. */
export function createdPage(frame: PageFrame, created: OwnedApp, baseUrl: string): Html {
  const { csrfToken } = frame;
  return page({
    title: created.name,
    ...frame,
    body: html`<h1>${created.name}</h1>
<p class="notice" role="status">Your app is ready. Copy the ClientSecret now: it is shown only this once, and belongs in your server's configuration, never in a web page or a mobile app.</p>
<dl class="keys">
  ${keyRow('AppID', 'appId', created.appId, 'Public: names the app in every request.')}
  ${keyRow('AppKey', 'appKey', created.appKey, 'Public: goes into client apps, for anonymous tokens.')}
  ${keyRow('ClientID', 'clientId', created.clientId, 'With the ClientSecret, gets admin tokens from server code.')}
  ${keyRow('ClientSecret', 'clientSecret', created.clientSecret, 'Secret: server code only. Shown once.')}
</dl>
${quickstarts({
  values: { baseUrl, appId: created.appId, appKey: created.appKey, clientId: created.clientId },
  allowedOrigins: [], // a new app allows none
  csrfToken,
  keepThisPage: true,
})}
<p><a class="button" href="/portal/apps/${created.appId}">Go to the app's page</a></p>`,
  });
}
