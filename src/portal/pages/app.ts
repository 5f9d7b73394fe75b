import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDescription } from '../../apps/app.js';
import { MAX_ORIGIN_LENGTH, parseAllowedOrigins } from '../../apps/origins.js';
import { mayAct, permissionsOf, type AppRole } from '../../developers/roles.js';
import { TesseraError } from '../../errors.js';
import { serviceBaseUrl } from '../base-url.js';
import { formField, type AppParams, type PortalContext } from '../context.js';
import { html, type Html } from '../html.js';
import { page } from '../layout.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf } from '../respond.js';
import { utcDay, utcTime } from '../time.js';
import { lifetime } from './common/lifetimes.js';
import { mistakeIn } from './common/mistakes.js';
import { appHeader } from './common/app-header.js';
import { keyRow } from './common/keys.js';
import { quickstarts, type OriginFormState } from './common/quickstarts.js';
import { secretExposureWarnings } from './common/secret-exposure-warning.js';

/** What the overview says after its add-origin form, by the `done` of its address (nothing else is shown from it). */
const DONE: Record<string, string> = {
  'origin-added': 'The origin is added: reload your page, and its calls get through.',
  'origin-listed': 'That origin was allowed already: nothing changed.',
};

/**
 * An app's page: its keys (never the ClientSecret again), quickstarts with them, and a summary of its
 * settings; and the quickstarts' form that adds a web page's origin to the app's allowed origins.
 */
export const appPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, clock, publicUrl }) => {
  app.addHook('preHandler', requireSession);

  /** The overview of `appId`, with the add-origin form in `origin`'s state. */
  async function overview(request: FastifyRequest, reply: FastifyReply, appId: string, role: AppRole, origin: OriginFormState) {
    const { developer } = sessionOf(request);
    const context = asDeveloper(request);
    const [described, exposure] = await Promise.all([apps.show(appId, context), events.secretExposures(appId, context)]);
    const csrfToken = reply.generateCsrf();
    const input = { role, now: clock.now(), baseUrl: serviceBaseUrl(request, publicUrl), csrfToken, origin };
    const body = appBody(described, input, secretExposureWarnings(described.appId, exposure, permissionsOf(role)));
    return page({ title: described.name, developer, csrfToken, body });
  }

  app.get<AppParams & { Querystring: { done?: string } }>('/apps/:appId', async (request, reply) => {
    const { developer } = sessionOf(request);
    // Another developer's app is 404, exactly as an app that does not exist.
    const role = await members.authorize(request.params.appId, developer.id, 'view_app');
    const done = request.query.done;
    const state = { done: typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined };
    return sendPage(reply, await overview(request, reply, request.params.appId, role, state));
  });

  // The quickstarts' "Your page's origin": the app's allowed origins become those it had and this
  // one (owner and collaborators may change the configuration). A form of the overview and of the
  // new-app page; the portal's script sends it with `Accept: application/json` and shows the answer
  // in place, so that the new-app page, with its ClientSecret, stays. Origins added at the same
  // moment are all kept (`AppService.allowOrigin`).
  app.post<AppParams>(
    '/apps/:appId/allowed-origins',
    { onRequest: requireSession, preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId } = request.params;
      const role = await members.authorize(appId, sessionOf(request).developer.id, 'change_configuration');
      const context = asDeveloper(request);
      const typed = (formField(request, 'origin') ?? '').slice(0, MAX_ORIGIN_LENGTH + 1);
      const wantsJson = (request.headers.accept ?? '').startsWith('application/json');
      let allowed: readonly string[];
      let outcome: keyof typeof DONE;
      try {
        const { app: updated, added } = await apps.allowOrigin(appId, originOf(typed.trim()), context);
        allowed = updated.configuration.allowedOrigins;
        outcome = added ? 'origin-added' : 'origin-listed';
      } catch (error) {
        const message = mistakeIn(error);
        if (wantsJson)
          return reply.status(400).send({ message, allowedOrigins: (await apps.show(appId, context)).configuration.allowedOrigins });
        return sendPage(reply, await overview(request, reply, appId, role, { mistake: { message, typed } }), 400);
      }
      if (wantsJson) return reply.send({ message: DONE[outcome], allowedOrigins: allowed });
      return seeOther(reply, `/portal/apps/${appId}?done=${outcome}#web-page-origins`);
    },
  );
};

/** The one origin typed, canonical (as browsers send it), or `invalid_request` saying what an origin is. */
function originOf(typed: string): string {
  if (typed === '') throw new TesseraError('invalid_request', "Type your page's origin, such as http://localhost:5173.");
  return parseAllowedOrigins([typed], "Your page's origin", () => "Your page's origin")[0]!;
}

interface OverviewInput {
  role: AppRole;
  now: number;
  baseUrl: string;
  csrfToken: string;
  origin: OriginFormState;
}

function appBody(app: AppDescription, { role, now, baseUrl, csrfToken, origin }: OverviewInput, warning: Html | null) {
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
    : html`<p class="notice" data-previous-secret-valid-until="${app.previousSecretValidUntil}">The previous ClientSecret still works, until ${utcTime(app.previousSecretValidUntil, 'second')}.${
        mayAct(role, 'rotate_secret')
          ? html` <a href="${base}/rotate-secret#end-previous-secret">End it now</a> once every server has the new one.`
          : null
      }</p>`
}
${
  mayAct(role, 'rotate_secret')
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
<p><a href="${base}/settings">Change the settings</a></p>`;
}
