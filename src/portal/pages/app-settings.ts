import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfiguration, AppDescription } from '../../apps/app.js';
import { MAX_LIFETIME_SECONDS, parseConfigurationChanges } from '../../apps/configuration.js';
import { MAX_ALLOWED_ORIGINS, MAX_ORIGIN_LENGTH, parseAllowedOrigins } from '../../apps/origins.js';
import { mayAct, type AppRole } from '../../developers/roles.js';
import { TesseraError } from '../../errors.js';
import { revocationKind, type RevocationKind } from '../../apps/revoke-all.js';
import { html, type Html } from '../html.js';
import { alert, csrfField, page } from '../layout.js';
import { formField, type AppParams, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf } from '../respond.js';
import { inLargestUnit, LIFETIME_UNITS } from './common/lifetimes.js';
import { mistakeIn } from './common/mistakes.js';
import { appHeader } from './common/app-header.js';

/** The longest the origins' text may be: every origin at its longest, one a line. */
const MAX_ORIGINS_TEXT = MAX_ALLOWED_ORIGINS * (MAX_ORIGIN_LENGTH + 2);
/**
 * The settings form's body: the origins' text at its longest, form-encoded (a browser writes `://`
 * and line breaks as `%3A%2F%2F` and `%0D%0A`), and the other fields. Larger than the server's
 * limit for other bodies, so only for a signed-in developer (checked before the body is read).
 */
const SETTINGS_BODY_LIMIT_BYTES = 64 * 1024;

const KIND_LABELS: Record<RevocationKind, string> = {
  admin: 'Admin tokens',
  anonymous: 'Anonymous tokens',
  all: 'All tokens, of both kinds',
};

/** The settings form as typed: lifetimes as a number and a unit, origins one a line. */
interface SettingsForm {
  adminMax: string;
  adminMaxUnit: string;
  anonymousMax: string;
  anonymousMaxUnit: string;
  requireAppKey: boolean;
  allowedOrigins: string;
}

/** Which form of the page a message is about, and what the page says after a change. */
type Section = 'settings' | 'revoke' | 'delete';
interface PageState {
  form?: SettingsForm;
  mistake?: { section: Section; message: string };
  deleteName?: string;
  done?: string | undefined;
}

/**
 * An app's settings: its token settings (owner and collaborators), revoking all of its tokens of a
 * kind (both), and deleting it (the owner only).
 */
export const appSettingsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, revoker }) => {
  app.addHook('preHandler', requireSession);

  app.get<AppParams & { Querystring: { done?: string } }>('/apps/:appId/settings', async (request, reply) => {
    const { appId } = request.params;
    const role = await members.authorize(appId, sessionOf(request).developer.id, 'change_configuration');
    return sendPage(
      reply,
      settingsPage(request, reply, await apps.show(appId, asDeveloper(request)), role, { done: doneMessage(request.query.done) }),
    );
  });

  const settingsRoute = { onRequest: requireSession, bodyLimit: SETTINGS_BODY_LIMIT_BYTES, preValidation: csrfCheck(app) };
  app.post<AppParams>('/apps/:appId/settings', settingsRoute, async (request, reply) => {
    const { appId } = request.params;
    const role = await members.authorize(appId, sessionOf(request).developer.id, 'change_configuration');
    const form = settingsFormOf(request);
    try {
      await apps.configure(appId, configurationOf(form), asDeveloper(request));
    } catch (error) {
      const mistake = { section: 'settings' as const, message: mistakeIn(error) };
      return sendPage(reply, settingsPage(request, reply, await apps.show(appId, asDeveloper(request)), role, { form, mistake }), 400);
    }
    return seeOther(reply, `/portal/apps/${appId}/settings?done=saved`);
  });

  app.post<AppParams>('/apps/:appId/revoke-tokens', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const role = await members.authorize(appId, sessionOf(request).developer.id, 'revoke_tokens');
    const kind = revocationKind(formField(request, 'kind'));
    let message: string | undefined;
    if (kind === undefined) message = 'Choose which tokens to revoke.';
    else if (formField(request, 'confirm') !== 'yes')
      message = `Tick "Yes, revoke them now" to confirm: ${KIND_LABELS[kind].toLowerCase()} of the app stop working at once.`;
    if (kind === undefined || message !== undefined) {
      const mistake = { section: 'revoke' as const, message: message! };
      return sendPage(reply, settingsPage(request, reply, await apps.show(appId, asDeveloper(request)), role, { mistake }), 400);
    }
    await revoker.revokeAll(appId, kind, asDeveloper(request));
    return seeOther(reply, `/portal/apps/${appId}/settings?done=revoked-${kind}`);
  });

  app.post<AppParams>('/apps/:appId/delete', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const role = await members.authorize(appId, sessionOf(request).developer.id, 'delete_app');
    const described = await apps.show(appId, asDeveloper(request));
    const typed = (formField(request, 'name') ?? '').slice(0, 200);
    if (typed.trim() !== described.name) {
      const mistake = {
        section: 'delete' as const,
        message: 'That is not the name of this app: type it exactly as shown, to confirm that you mean this app.',
      };
      return sendPage(reply, settingsPage(request, reply, described, role, { mistake, deleteName: typed }), 400);
    }
    await apps.delete(appId, asDeveloper(request));
    return seeOther(reply, '/portal/?done=deleted');
  });
};

/** What the page says after a change, by the `done` of its address (nothing else is shown from it). */
const DONE: Record<string, string> = {
  saved: 'The settings are saved. They apply to the next token request.',
  'revoked-admin':
    'Every admin token of the app is revoked: each one is refused from now on. Server code gets a new one with the ClientSecret.',
  // Anonymous tokens are ended by the app's cut-off, set to now: the ones issued after it work.
  'revoked-anonymous':
    'Every anonymous token of the app issued until now is refused from now on. Clients get a new one with the AppID (and the AppKey, if the app requires it).',
  'revoked-all':
    "Every admin token, and every anonymous token issued until now, is refused from now on. Clients get new tokens with the app's keys.",
};

function doneMessage(done: unknown): string | undefined {
  return typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined;
}

function settingsFormOf(request: FastifyRequest): SettingsForm {
  const field = (name: string, max: number) => (formField(request, name) ?? '').slice(0, max);
  return {
    adminMax: field('adminMax', 20).trim(),
    adminMaxUnit: field('adminMaxUnit', 20),
    anonymousMax: field('anonymousMax', 20).trim(),
    anonymousMaxUnit: field('anonymousMaxUnit', 20),
    requireAppKey: formField(request, 'requireAppKey') === 'yes',
    allowedOrigins: field('allowedOrigins', MAX_ORIGINS_TEXT + 1),
  };
}

/** The change the form asks for, checked by the same rules as the API's. */
function configurationOf(form: SettingsForm): Partial<AppConfiguration> {
  if (form.allowedOrigins.length > MAX_ORIGINS_TEXT) {
    throw new TesseraError('invalid_request', `The list of origins is too long: at most ${MAX_ALLOWED_ORIGINS} origins.`);
  }
  const lines = form.allowedOrigins.split(/\r?\n/).map((text, index) => ({ text: text.trim(), number: index + 1 }));
  const listed = lines.filter((line) => line.text !== '');
  const origins = parseAllowedOrigins(
    listed.map((line) => line.text),
    'Web pages allowed',
    (index) => `Line ${listed[index]!.number}`,
  );
  return parseConfigurationChanges({
    adminTokenMaxLifetimeSeconds: lifetimeOf(form.adminMax, form.adminMaxUnit, 'The longest lifetime of an admin token'),
    anonymousTokenMaxLifetimeSeconds: lifetimeOf(form.anonymousMax, form.anonymousMaxUnit, 'The longest lifetime of an anonymous token'),
    requireAppKey: form.requireAppKey,
    allowedOrigins: origins,
  });
}

function lifetimeOf(amount: string, unit: string, name: string): number | null {
  if (amount === '') return null;
  const size = LIFETIME_UNITS.find(([unitName]) => unitName === unit)?.[1];
  if (!/^[0-9]{1,10}$/.test(amount) || size === undefined || Number(amount) < 1 || Number(amount) * size > MAX_LIFETIME_SECONDS) {
    throw new TesseraError(
      'invalid_request',
      `${name} must be a whole number of seconds, minutes, hours or days, from 1 second to ${MAX_LIFETIME_SECONDS} seconds (about 68 years); leave it empty for no limit.`,
    );
  }
  return Number(amount) * size;
}

/** The form as the app now is: each lifetime in the largest unit it is a whole number of. */
function formOf(configuration: AppConfiguration): SettingsForm {
  const [adminMax, adminMaxUnit] = amountAndUnit(configuration.adminTokenMaxLifetimeSeconds);
  const [anonymousMax, anonymousMaxUnit] = amountAndUnit(configuration.anonymousTokenMaxLifetimeSeconds);
  return {
    adminMax,
    adminMaxUnit,
    anonymousMax,
    anonymousMaxUnit,
    requireAppKey: configuration.requireAppKey,
    allowedOrigins: configuration.allowedOrigins.join('\n'),
  };
}

function amountAndUnit(seconds: number | null): [string, string] {
  if (seconds === null) return ['', 'hour'];
  const [amount, unit] = inLargestUnit(seconds);
  return [String(amount), unit];
}

function settingsPage(request: FastifyRequest, reply: FastifyReply, app: AppDescription, role: AppRole, state: PageState) {
  const csrfToken = reply.generateCsrf();
  const form = state.form ?? formOf(app.configuration);
  const mistakeOf = (section: Section) => alert(state.mistake?.section === section ? state.mistake.message : undefined);
  const base = `/portal/apps/${app.appId}`;
  return page({
    title: `Settings of ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`${appHeader(app.appId, app.name, 'Settings')}
${state.done === undefined ? null : html`<p class="notice success" role="status">${state.done}</p>`}
<section class="app-form" aria-labelledby="token-settings">
<h2 id="token-settings">Token settings</h2>
${mistakeOf('settings')}
<form method="post" action="${base}/settings" class="stack">
  ${csrfField(csrfToken)}
  ${lifetimeField('admin-max', 'adminMax', 'Longest lifetime of an admin token', form.adminMax, form.adminMaxUnit)}
  ${lifetimeField('anonymous-max', 'anonymousMax', 'Longest lifetime of an anonymous token', form.anonymousMax, form.anonymousMaxUnit)}
  <p class="hint" id="lifetime-hint">Empty: no limit. A token requested without an expiry gets the longest lifetime; one asked to live longer is refused.</p>
  <div class="choice">
    <input type="checkbox" id="require-app-key" name="requireAppKey" value="yes"${form.requireAppKey ? html` checked` : null} aria-describedby="require-app-key-hint">
    <label for="require-app-key">Anonymous tokens need the AppKey</label>
  </div>
  <p class="hint" id="require-app-key-hint">Unticked, an anonymous token request needs only the AppID, as the service's first clients expect.</p>
  <label for="allowed-origins">Web pages allowed to call the service</label>
  <textarea id="allowed-origins" name="allowedOrigins" rows="4" maxlength="${MAX_ORIGINS_TEXT}" autocomplete="off" spellcheck="false" autocapitalize="off" aria-describedby="allowed-origins-hint">${form.allowedOrigins}</textarea>
  <p class="hint" id="allowed-origins-hint">One origin a line, such as <code>https://app.example.com</code> or <code>http://localhost:3000</code>, or <code>https://*.example.com</code> for every subdomain. Empty: no web page may.</p>
  <div class="buttons"><button type="submit">Save settings</button></div>
</form>
</section>
<section class="danger-zone" aria-labelledby="danger-zone">
<h2 id="danger-zone">Danger zone</h2>
<p>What cannot be undone, kept apart from the settings above. Each asks you to confirm it first.</p>
<section class="app-form" aria-labelledby="revoke-tokens">
<h3 id="revoke-tokens">Revoke tokens</h3>
<p>Every token of the kind stops working at once, wherever it is; clients get new ones with the app's keys.</p>
${mistakeOf('revoke')}
<form method="post" action="${base}/revoke-tokens" class="stack">
  ${csrfField(csrfToken)}
  <fieldset>
    <legend>Which tokens</legend>
    ${(Object.entries(KIND_LABELS) as [RevocationKind, string][]).map(
      ([kind, label]) => html`<div class="choice">
      <input type="radio" id="revoke-${kind}" name="kind" value="${kind}" required>
      <label for="revoke-${kind}">${label}</label>
    </div>`,
    )}
  </fieldset>
  <div class="choice">
    <input type="checkbox" id="revoke-confirm" name="confirm" value="yes" required>
    <label for="revoke-confirm">Yes, revoke them now</label>
  </div>
  <div class="buttons"><button type="submit" class="danger">Revoke tokens</button></div>
</form>
</section>
${
  mayAct(role, 'delete_app')
    ? html`<section class="app-form" aria-labelledby="delete-app">
<h3 id="delete-app">Delete the app</h3>
<p>The app, its keys, its tokens, its events and its people are deleted, for good. Clients that use it stop working.</p>
${mistakeOf('delete')}
<form method="post" action="${base}/delete" class="stack">
  ${csrfField(csrfToken)}
  <label for="delete-name">Type the app's name to confirm</label>
  <p class="hint" id="delete-name-hint">It is <strong>${app.name}</strong>.</p>
  <input type="text" id="delete-name" name="name" required maxlength="200" autocomplete="off" spellcheck="false" value="${state.deleteName ?? ''}" aria-describedby="delete-name-hint">
  <div class="buttons"><button type="submit" class="danger">Delete app</button></div>
</form>
</section>`
    : null
}
</section>`,
  });
}

function lifetimeField(id: string, name: string, label: string, amount: string, unit: string): Html {
  return html`<label for="${id}">${label}</label>
  <div class="lifetime">
    <input type="text" id="${id}" name="${name}" inputmode="numeric" pattern="[0-9]*" maxlength="20" autocomplete="off" value="${amount}" aria-describedby="lifetime-hint">
    <label for="${id}-unit" class="visually-hidden">Unit of the ${label.toLowerCase()}</label>
    <select id="${id}-unit" name="${name}Unit">
      ${LIFETIME_UNITS.map(([unitName]) => html`<option value="${unitName}"${unitName === unit ? html` selected` : null}>${unitName}s</option>`)}
    </select>
  </div>`;
}
