import type { FastifyPluginAsync } from 'fastify';
import type { AppDescription } from '../../apps/app.js';
import { mayAct, type AppRole } from '../../developers/roles.js';
import { html, type Html } from '../html.js';
import { page } from '../layout.js';
import type { PortalContext } from '../context.js';
import { asDeveloper, requireSession, sendPage, sessionOf } from '../respond.js';
import { utcDay, utcTime } from '../time.js';
import { lifetime, type AppParams } from './app-common.js';
import { appHeader } from './app-nav.js';
import { keyRow } from './keys.js';
import { secretExposureWarning } from './secret-exposure-warning.js';

/** An app's page: its keys (never the ClientSecret again) and a summary of its settings. */
export const appPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, clock }) => {
  app.addHook('preHandler', requireSession);

  app.get<AppParams>('/apps/:appId', async (request, reply) => {
    const { developer } = sessionOf(request);
    // Another developer's app is 404, exactly as an app that does not exist.
    const role = await members.authorize(request.params.appId, developer.id, 'view_app');
    const context = asDeveloper(request);
    const [described, exposure] = await Promise.all([
      apps.show(request.params.appId, context),
      events.lastSecretExposure(request.params.appId, context),
    ]);
    const body = appBody(described, role, clock.now(), secretExposureWarning(described.appId, exposure, role));
    return sendPage(reply, page({ title: described.name, developer, csrfToken: reply.generateCsrf(), body }));
  });
};

function appBody(app: AppDescription, role: AppRole, now: number, warning: Html | null) {
  const { configuration } = app;
  const base = `/portal/apps/${app.appId}`;
  return html`${appHeader(app.appId, app.name, 'Overview')}
${warning}
<p class="meta">You are its ${role}. Created ${utcDay(app.createdAt)}.</p>
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
    : html`<p class="notice" data-previous-secret-valid-until="${app.previousSecretValidUntil}">The previous ClientSecret still works, until ${utcTime(app.previousSecretValidUntil, 'second')}.</p>`
}
${
  mayAct(role, 'rotate_secret')
    ? html`<form method="get" action="${base}/rotate-secret" class="action">
  <button type="submit" class="secondary">Rotate ClientSecret</button>
  <span class="hint">A new ClientSecret, shown once; you choose how long the current one keeps working.</span>
</form>`
    : null
}
<h2>Token settings</h2>
<dl class="settings">
  <div><dt>Longest admin token</dt><dd>${lifetime(configuration.adminTokenMaxLifetimeSeconds)}</dd></div>
  <div><dt>Longest anonymous token</dt><dd>${lifetime(configuration.anonymousTokenMaxLifetimeSeconds)}</dd></div>
  <div><dt>AppKey required for anonymous tokens</dt><dd>${configuration.requireAppKey ? 'yes' : 'no'}</dd></div>
  <div><dt>Web pages allowed to call the service</dt><dd>${configuration.allowedOrigins.length === 0 ? 'none' : html`<ul class="plain">${configuration.allowedOrigins.map((origin) => html`<li><code>${origin}</code></li>`)}</ul>`}</dd></div>
</dl>
<p><a href="${base}/settings">Change the settings</a></p>`;
}
