import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { SecretExposure } from '../../../apps/secret-exposure.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { html, type Html } from '../../html.js';
import { page, type PageFrame } from '../../layout.js';
import { utcDay, utcTime } from '../../time.js';
import { appHeader } from '../common/app-header.js';
import { keyRow } from '../common/access-keys.js';
import { lifetime } from '../common/lifetimes.js';
import { quickstarts, type OriginFormState } from '../common/quickstarts.js';
import { secretExposureWarnings } from '../common/secret-exposure-warning.js';

// An app's overview: a pure function of the app, what the developer may do, its secrets' exposures
// and the add-origin form's state, to HTML.

/** What the overview says after its add-origin form, by the `done` of its address (nothing else is shown from it). */
export const DONE: Record<string, string> = {
  'origin-added': 'The origin is added: reload your page, and its calls get through.',
  'origin-listed': 'That origin was allowed already: nothing changed.',
};

export function doneMessage(done: unknown): string | undefined {
  return typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined;
}

export interface OverviewInput {
  app: AppDescription;
  permissions: AppPermissions;
  exposures: readonly SecretExposure[];
  /** With mail (`SMTP_URL`): whether this app's alerts are mailed to the developer, and whether that was just changed; undefined without. */
  alerts?: { on: boolean; changed: boolean } | undefined;
  now: number;
  baseUrl: string;
  origin: OriginFormState;
}

/** The overview of the app, with the add-origin form in `origin`'s state. */
export function overviewPage(frame: PageFrame, input: OverviewInput): Html {
  const { app, permissions, exposures } = input;
  const warning = secretExposureWarnings(app.appId, exposures, permissions);
  return page({ title: app.name, ...frame, body: appBody(app, { ...input, csrfToken: frame.csrfToken }, warning) });
}

function appBody(
  app: AppDescription,
  { permissions, now, baseUrl, csrfToken, origin, alerts }: OverviewInput & { csrfToken: string },
  warning: Html | null,
) {
  const { configuration } = app;
  const base = `/portal/apps/${app.appId}`;
  return html`${appHeader(app.appId, app.name, 'Overview', permissions)}
${warning}
<p class="meta">You are its ${permissions.role}. Created ${utcDay(app.createdAt)}.</p>
<h2>Keys</h2>
<dl class="keys">
  ${keyRow('AppID', 'appId', app.appId, 'Public: names the app in every request.')}
  ${keyRow('AppKey', 'appKey', app.appKey, 'Public: goes into client apps, for anonymous tokens.')}
  ${keyRow('ClientID', 'clientId', app.clientId, 'With the ClientSecret, gets admin tokens from server code.')}
</dl>
<p class="hint">The ClientSecret was shown once, when the app was created or its secret last rotated.</p>
${
  app.previousSecretValidUntil === null || Date.parse(app.previousSecretValidUntil) <= now
    ? null
    : html`<p class="notice" data-previous-secret-valid-until="${app.previousSecretValidUntil}">The previous ClientSecret still works, until ${utcTime(app.previousSecretValidUntil, 'second')}.${
        permissions.may.rotate_secret
          ? html` <a href="${base}/rotate-secret#end-previous-secret">End it now</a> once every server has the new one.`
          : null
      }</p>`
}
${
  permissions.may.rotate_secret
    ? html`<p class="action">
  <a class="button secondary" href="${base}/rotate-secret">Rotate ClientSecret</a>
  <span class="hint">A new ClientSecret, shown once; you choose how long the current one keeps working.</span>
</p>`
    : null
}
${quickstarts({
  values: { baseUrl, appId: app.appId, appKey: app.appKey, clientId: app.clientId },
  allowedOrigins: configuration.allowedOrigins,
  csrfToken,
  origin,
})}
<h2>Token settings</h2>
<dl class="settings">
  <div><dt>Longest lifetime of an admin token</dt><dd>${lifetime(configuration.adminTokenMaxLifetimeSeconds)}</dd></div>
  <div><dt>Longest lifetime of an anonymous token</dt><dd>${lifetime(configuration.anonymousTokenMaxLifetimeSeconds)}</dd></div>
  <div><dt>AppKey required for anonymous tokens</dt><dd>${configuration.requireAppKey ? 'yes' : 'no'}</dd></div>
  <div><dt>Web pages allowed to call the service</dt><dd data-allowed-origins-setting>${configuration.allowedOrigins.length === 0 ? 'none' : html`<ul class="plain">${configuration.allowedOrigins.map((origin) => html`<li><code>${origin}</code></li>`)}</ul>`}</dd></div>
</dl>
<p><a href="${base}/settings">Change the settings</a></p>
${alerts === undefined ? null : alertsSection(base, alerts, csrfToken)}`;
}

/** Whether this app's alerts are mailed to the developer, and the button that changes it, for them alone. */
function alertsSection(base: string, { on, changed }: { on: boolean; changed: boolean }, csrfToken: string): Html {
  return html`<h2 id="alerts">Alerts by mail</h2>
${changed ? html`<p class="notice success" role="status">${on ? 'Alerts of this app are mailed to you.' : 'Alerts of this app are no longer mailed to you.'}</p>` : null}
<p>${
    on
      ? 'You get this app’s alerts by mail: a ClientSecret sent from a browser, a burst of refused requests, a credential refused for its expiry or address, and the secret rotated or a credential made or revoked by someone else. Each kind at most once an hour.'
      : 'You get no alert of this app by mail. The other members choose for themselves.'
  }</p>
<form method="post" action="${base}/alerts">
  <input type="hidden" name="_csrf" value="${csrfToken}">
  <input type="hidden" name="alerts" value="${on ? 'off' : 'on'}">
  <button type="submit" class="secondary">${on ? 'Turn alerts off' : 'Turn alerts on'}</button>
</form>`;
}
