import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { RevocationKind } from '../../../apps/revoke-all.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField, page, type PageFrame } from '../../layout.js';
import { appHeader } from '../common/app-header.js';
import { LIFETIME_UNITS } from '../common/lifetimes.js';
import { formOfConfiguration, KIND_LABELS, MAX_AUDIENCE_TEXT, MAX_ORIGINS_TEXT, type SettingsForm } from './form.js';

const FORMATS: readonly (readonly [string, string])[] = [
  ['opaque', 'Opaque: checked by Tessera (forward authentication, introspection, the verifier library)'],
  ['jwt', 'JWT (RFC 9068): also checked offline, with the published keys'],
];

// The settings page's view: a pure function of the app, what the developer may do, and the state
// its forms left.

/** Which form of the page a message is about, and what the page says after a change. */
export type Section = 'settings' | 'revoke' | 'delete';
export interface PageState {
  form?: SettingsForm;
  mistake?: { section: Section; message: string };
  deleteName?: string;
  done?: string | undefined;
}

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

export function doneMessage(done: unknown): string | undefined {
  return typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined;
}

/** The token settings, revoking tokens, and deleting the app (for whom may). */
export function settingsPage(frame: PageFrame, app: AppDescription, permissions: AppPermissions, state: PageState): Html {
  const { csrfToken } = frame;
  const form = state.form ?? formOfConfiguration(app.configuration);
  const mistakeOf = (section: Section) => alert(state.mistake?.section === section ? state.mistake.message : undefined);
  const base = `/portal/apps/${app.appId}`;
  return page({
    title: `Settings of ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Settings', permissions)}
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
  <fieldset aria-describedby="token-format-hint">
    <legend>Token format</legend>
    ${FORMATS.map(
      ([format, label]) => html`<div class="choice">
      <input type="radio" id="token-format-${format}" name="accessTokenFormat" value="${format}"${form.accessTokenFormat === format ? html` checked` : null}>
      <label for="token-format-${format}">${label}</label>
    </div>`,
    )}
  </fieldset>
  <p class="hint" id="token-format-hint">A JWT is checked by other services without asking Tessera, with the keys at <code>/api/apps/${app.appId}/jwks.json</code>; it lives 24 hours at most, and its revocation reaches them through a status list within a minute. Tokens issued before keep their format.</p>
  <label for="token-audience">Audiences of a JWT</label>
  <textarea id="token-audience" name="accessTokenAudience" rows="2" maxlength="${MAX_AUDIENCE_TEXT}" autocomplete="off" spellcheck="false" autocapitalize="off" aria-describedby="token-audience-hint">${form.accessTokenAudience}</textarea>
  <p class="hint" id="token-audience-hint">One a line, such as <code>https://api.example.com</code>: what the services that check the JWT expect in <code>aud</code>. Empty: <code>tessera:app:${app.appId}</code>.</p>
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
  permissions.may.delete_app
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
