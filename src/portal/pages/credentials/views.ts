import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { CreatedCredential, CredentialPermissions, RotatedCredential } from '../../../apps/credential-service.js';
import { credentialCommands, credentialNodeScript } from '../../../apps/snippets.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { MAX_ALLOWED_ADDRESSES } from '../../../credentials/addresses.js';
import { MAX_CREDENTIAL_NAME_LENGTH, type CredentialDescription } from 'tessera-tokens/internal/credentials/credential.js';
import { BUILT_IN_SCOPES, MAX_SCOPE_LENGTH, type BuiltInScope } from 'tessera-tokens/internal/credentials/scopes.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField, onceField, page, type PageFrame } from '../../layout.js';
import { utcText, utcTime } from '../../time.js';
import { appHeader } from '../common/app-header.js';
import { codeText } from '../common/code-text.js';
import { keyRow } from '../common/access-keys.js';
import {
  endedNotice,
  endPreviousSecretForm,
  graceFieldset,
  replacedSecretOutcome,
  rotatedSecretKeys,
  rotationOutcome,
  type GraceForm,
} from '../common/rotation.js';
import { setSecretStep } from '../common/set-secret.js';
import { MAX_ADDRESSES_TEXT, MAX_OWN_SCOPES_TEXT, type CredentialForm, type Field, type Mistake } from './form.js';

// The credentials pages' views: pure functions of what the handlers read, to HTML.

/** What each built-in scope lets a credential's admin tokens do, in a line. */
const SCOPE_HINTS: Record<BuiltInScope, string> = {
  'app:read': 'See the app: its name, its public keys and its token settings (never a secret).',
  'configuration:read': 'Read the token settings.',
  'configuration:write': 'Change the token settings.',
  'events:read': 'Read the events and their counts.',
  'tokens:introspect': 'Ask whether a token is valid, and whose it is (introspection).',
  'tokens:revoke': 'Revoke other tokens, and every token of a kind at once.',
  'credentials:manage': 'List, create, rotate and revoke credentials, as this page does.',
  'webhooks:manage': 'Add, list and delete webhooks, rotate their secrets, and see and resend their deliveries.',
};

export interface RevokedNotice {
  name: string;
  tokensRevoked: number;
  /** The credentials its admin tokens made, revoked with it. */
  madeNames: string[];
}

export interface ListState {
  form: CredentialForm;
  mistake?: Mistake;
  revoked?: RevokedNotice | undefined;
}

export interface ListInput extends ListState {
  app: AppDescription;
  /** What the developer may do with the credentials (`CredentialService.permissions`). */
  permissions: CredentialPermissions;
  /** What the developer may do on the app (its tabs). */
  access: AppPermissions;
  listed: CredentialDescription[];
  /** Members' emails by developer id: who made a credential, while they are a member. */
  emails: Map<string, string>;
  now: number;
  once: string;
}

/** Who made a credential, in words. */
function creatorOf(credential: CredentialDescription, emails: Map<string, string>): string {
  switch (credential.createdBy) {
    case 'developer':
      return emails.get(credential.createdByDeveloperId ?? '') ?? 'a developer';
    case 'operator':
      return 'the operator';
    case 'admin':
      return 'an admin token';
  }
}

/** The scopes of a credential that keep the developer from rotating it (`CredentialPermissions`), as code. */
function withheldText(permissions: CredentialPermissions, credential: CredentialDescription): Html {
  return html`${permissions.withheldFrom(credential.scopes).map((scope, index) => html`${index === 0 ? '' : ', '}<code>${scope}</code>`)}`;
}

function scopeList(scopes: readonly string[]): Html {
  return html`<ul class="scopes">${scopes.map((scope) => html`<li><code>${scope}</code></li>`)}</ul>`;
}

function expiryText(expiresAt: string | null, now: number): Html | string {
  if (expiresAt === null) return 'Never';
  return Date.parse(expiresAt) <= now ? html`<span class="expired">Expired</span> ${utcTime(expiresAt)}` : utcTime(expiresAt);
}

function addressesText(allowFrom: readonly string[]): Html | string {
  return allowFrom.length === 0
    ? 'Any address'
    : html`<ul class="plain">${allowFrom.map((cidr) => html`<li><code>${cidr}</code></li>`)}</ul>`;
}

function credentialItem(credential: CredentialDescription, input: ListInput): Html {
  const { app, permissions, emails, now } = input;
  const base = `/portal/apps/${app.appId}/credentials/${credential.clientId}`;
  const headingId = `credential-${credential.clientId}`;
  const graceUntil = credential.previousSecretValidUntil;
  return html`<li class="credential" aria-labelledby="${headingId}">
  <h3 id="${headingId}">${credential.name}</h3>
  <dl>
    <div><dt>ClientID</dt><dd><code>${credential.clientId}</code></dd></div>
    <div><dt>Scopes</dt><dd>${scopeList(credential.scopes)}</dd></div>
    <div><dt>Expires</dt><dd>${expiryText(credential.expiresAt, now)}</dd></div>
    <div><dt>Allowed addresses</dt><dd>${addressesText(credential.allowFrom)}</dd></div>
    <div><dt>Created</dt><dd>${utcTime(credential.createdAt)} by ${creatorOf(credential, emails)}</dd></div>
    <div><dt>Last used</dt><dd>${credential.lastUsedAt === null ? 'Never' : utcTime(credential.lastUsedAt)}</dd></div>
    ${
      graceUntil === null || Date.parse(graceUntil) <= now
        ? null
        : html`<div><dt>Previous secret</dt><dd>Works until ${utcTime(graceUntil, 'second')}</dd></div>`
    }
  </dl>
  <p class="row-actions">
    ${
      permissions.mayRotate(credential)
        ? html`<a href="${base}/rotate" aria-label="Rotate secret of ${credential.name}">Rotate secret</a>`
        : html`<span class="hint">Only the owner rotates it: it has ${withheldText(permissions, credential)}.</span>`
    }
    <a href="${base}/revoke" class="danger-link" aria-label="Revoke ${credential.name}">Revoke</a>
  </p>
</li>`;
}

/** How many of its admin tokens a revocation took with it, in words. */
function revokedTokensText(count: number): string {
  if (count === 0) return 'and it had no admin token to revoke';
  return count === 1 ? 'and the 1 admin token it got was revoked with it' : `and the ${count} admin tokens it got were revoked with it`;
}

/** The list and the new-credential form, with what was typed and what was wrong with it, if anything. */
export function credentialsPage(frame: PageFrame, input: ListInput): Html {
  const { app, access, listed, revoked } = input;
  const { csrfToken } = frame;
  return page({
    title: `Credentials · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Credentials', access)}
${
  revoked === undefined
    ? null
    : html`<p class="notice success" role="status" data-revoked-tokens="${revoked.tokensRevoked}">The credential <strong>${revoked.name}</strong> is revoked: its secret no longer works, ${revokedTokensText(revoked.tokensRevoked)}.${
        revoked.madeNames.length === 0
          ? null
          : html` Its admin tokens had made ${revoked.madeNames.length === 1 ? 'a credential' : `${revoked.madeNames.length} credentials`}, revoked with it: ${revoked.madeNames.map((name, index) => html`${index === 0 ? '' : ', '}<strong>${name}</strong>`)}.`
      }</p>`
}
<h2 id="credentials-heading">Credentials</h2>
<p class="lead">A credential is a further ClientID and ClientSecret of the app whose admin tokens may do only what its scopes allow, until its expiry, from its addresses: least privilege for server code.</p>
${
  listed.length === 0
    ? html`<div class="empty-state">
  <p><strong>No credentials yet.</strong> The app's own ClientID and ClientSecret get admin tokens that may do everything. Give each piece of server code a credential of its own instead, with only what it needs: a CI job that only reads events gets <code>events:read</code>; a support tool that checks tokens gets <code>tokens:introspect</code>. One that leaks can then do little, and is revoked alone, without touching the others.</p>
</div>`
    : html`<ul class="credentials" aria-labelledby="credentials-heading">${listed.map((credential) => credentialItem(credential, input))}</ul>`
}
${newCredentialForm(input, csrfToken)}`,
  });
}

function newCredentialForm(input: ListInput, csrfToken: string): Html {
  const { app, permissions, form, mistake, now, once } = input;
  const invalid = (field: Field) => (mistake?.field === field ? html` aria-invalid="true"` : null);
  const describedBy = (field: Field, hint: string) => (mistake?.field === field ? `credential-error ${hint}` : hint);
  const focus = (field: Field) => (mistake?.field === field ? html` autofocus` : null);
  // The first field of the mistake has the focus: the own scopes when they were typed, else the first box.
  const focusScopes = mistake?.field === 'scopes' && form.ownScopes.trim() === '';
  const scopeBox = (scope: BuiltInScope, index: number) => {
    const id = `scope-${scope.replace(/[^a-z]/g, '-')}`;
    const disabled = !permissions.mayGive(scope);
    const checked = form.scopes.includes(scope) && !disabled;
    return html`<div class="scope-choice">
      <div class="choice">
        <input type="checkbox" id="${id}" name="scope" value="${scope}"${checked ? html` checked` : null}${disabled ? html` disabled` : null}${focusScopes && index === 0 ? html` autofocus` : null} aria-describedby="${id}-hint">
        <label for="${id}"><code>${scope}</code></label>
      </div>
      <p class="hint" id="${id}-hint">${SCOPE_HINTS[scope]}${disabled ? html` <strong>Only the app's owner may give it.</strong>` : null}</p>
    </div>`;
  };
  const nowText = utcText(now);
  return html`<section class="app-form" id="new-credential" aria-labelledby="new-credential-heading">
<h2 id="new-credential-heading">New credential</h2>
${mistake === undefined ? null : html`<p class="alert" role="alert" id="credential-error">${mistake.message}</p>`}
<form method="post" action="/portal/apps/${app.appId}/credentials" class="stack">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  <label for="credential-name">Name</label>
  <input type="text" id="credential-name" name="name" required maxlength="${MAX_CREDENTIAL_NAME_LENGTH}" autocomplete="off" value="${form.name}" aria-describedby="${describedBy('name', 'credential-name-hint')}"${invalid('name')}${focus('name')}>
  <p class="hint field-hint" id="credential-name-hint">What uses it, for you and your collaborators: "CI: read events".</p>
  <fieldset aria-describedby="${describedBy('scopes', 'scopes-hint')}">
    <legend>Scopes</legend>
    <p class="hint" id="scopes-hint">What its admin tokens may do: at least one. A token may ask for fewer, never more.</p>
    ${BUILT_IN_SCOPES.map(scopeBox)}
    <label for="own-scopes">The app's own scopes</label>
    <input type="text" id="own-scopes" name="ownScopes" maxlength="${MAX_OWN_SCOPES_TEXT}" autocomplete="off" spellcheck="false" autocapitalize="off" value="${form.ownScopes}" aria-describedby="${describedBy('scopes', 'own-scopes-hint')}"${mistake?.field === 'scopes' && !focusScopes ? html` aria-invalid="true" autofocus` : null}>
    <p class="hint" id="own-scopes-hint">Optional, separated by spaces, such as <code>reports:read orders</code>: lower case, up to ${MAX_SCOPE_LENGTH} characters each. Tessera carries them in the token for the rest of your backend. They must not start with <code>app:</code>, <code>configuration:</code>, <code>events:</code>, <code>tokens:</code> or <code>credentials:</code>.</p>
  </fieldset>
  <label for="credential-expires">Expires (UTC, optional)</label>
  <input type="datetime-local" id="credential-expires" name="expiresAt" value="${form.expiresAt}" min="${new Date(now).toISOString().slice(0, 16)}" aria-describedby="${describedBy('expiresAt', 'credential-expires-hint')}"${invalid('expiresAt')}${focus('expiresAt')}>
  <p class="hint field-hint" id="credential-expires-hint">A date and time in UTC, not your own time zone: it is ${nowText} now. From then on it gets no token, and tokens it got stop working. Empty: it never expires.</p>
  <label for="credential-allow-from">Allowed addresses (optional)</label>
  <textarea id="credential-allow-from" name="allowFrom" rows="3" maxlength="${MAX_ADDRESSES_TEXT}" autocomplete="off" spellcheck="false" autocapitalize="off" aria-describedby="${describedBy('allowFrom', 'credential-allow-from-hint')}"${invalid('allowFrom')}${focus('allowFrom')}>${form.allowFrom}</textarea>
  <p class="hint field-hint" id="credential-allow-from-hint">One CIDR a line, such as <code>203.0.113.0/24</code> or <code>2001:db8::/32</code>; a single address is a <code>/32</code> (IPv4) or <code>/128</code> (IPv6). Only clients at these addresses may use it, up to ${MAX_ALLOWED_ADDRESSES}. Empty: any address.</p>
  <div class="buttons"><button type="submit">Create credential</button></div>
</form>
</section>`;
}

/** A new credential, its ClientSecret shown this once, and how to get a token with it from `base`. */
export function createdPage(
  frame: PageFrame,
  access: AppPermissions,
  app: AppDescription,
  created: CreatedCredential,
  base: string,
  now: number,
): Html {
  // As the quickstarts (src/apps/snippets.ts): short lines, the secret from the environment, 15 minutes.
  const values = { baseUrl: base, appId: app.appId, clientId: created.clientId };
  const command = credentialCommands(values);
  const script = credentialNodeScript({ ...values, scopes: created.scopes });
  return page({
    title: `New credential · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Credentials', access)}
<h2>New credential: ${created.name}</h2>
<p class="notice" role="status">The credential is ready. Copy its ClientSecret now: it is shown only this once, and belongs in the configuration of the server code that uses it, never in a web page or a mobile app.</p>
<dl class="keys">
  ${keyRow('ClientID', 'clientId', created.clientId, 'Names this credential in token requests.')}
  ${keyRow('ClientSecret', 'clientSecret', created.clientSecret, 'Secret: server code only. Shown once.')}
</dl>
<dl class="settings credential-summary">
  <div><dt>Scopes</dt><dd>${scopeList(created.scopes)}</dd></div>
  <div><dt>Expires</dt><dd>${expiryText(created.expiresAt, now)}</dd></div>
  <div><dt>Allowed addresses</dt><dd>${addressesText(created.allowFrom)}</dd></div>
</dl>
<h3>Get a token</h3>
${setSecretStep("this credential's ClientSecret")}
<p>Then an admin token with the credential's scopes, asked to live 15 minutes (add <code>-d scope=…</code> to ask for fewer):</p>
<pre class="commands" data-snippet="credential-token" data-copyable="the token request" tabindex="0" aria-label="A token request with the new credential"><code>${codeText(command)}</code></pre>
<p>Or in server code, with <code class="nowrap">tessera-tokens/client</code>, which renews its tokens before they expire (the app's quickstarts say how to install it):</p>
<pre class="commands" data-snippet="credential-node" data-copyable="the server code" tabindex="0" aria-label="Server code with the new credential"><code>${codeText(script)}</code></pre>
<p><a class="button" href="/portal/apps/${app.appId}/credentials">Back to the credentials</a></p>`,
  });
}

export interface RotationInput extends GraceForm {
  app: AppDescription;
  credential: CredentialDescription;
  permissions: CredentialPermissions;
  access: AppPermissions;
  now: number;
  /** The form's `once` value (`single-use-forms.ts`). */
  once: string;
  /** The `ended` of the page's address, after its end-of-grace form. */
  ended?: unknown;
}

/** The rotation form of a credential (or why the developer may not rotate it), and the end of a grace period still running. */
export function rotationPage(frame: PageFrame, input: RotationInput, message?: string): Html {
  const { app, credential, permissions, access, now, grace, graceSeconds, ended, once } = input;
  const { csrfToken } = frame;
  const list = `/portal/apps/${app.appId}/credentials`;
  const graceUntil = credential.previousSecretValidUntil;
  return page({
    title: `Rotate the secret of ${credential.name} · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Credentials', access)}
<section class="app-form">
<h2>Rotate the secret of ${credential.name}</h2>
${endedNotice(ended)}
<p>A new ClientSecret replaces the current one of <code>${credential.clientId}</code>, and is shown once. Its ClientID, scopes, expiry and addresses stay as they are.</p>
${
  graceUntil === null || Date.parse(graceUntil) <= now
    ? null
    : endPreviousSecretForm(`${list}/${credential.clientId}/end-previous-secret`, csrfToken, graceUntil, 'secret')
}
${
  permissions.mayRotate(credential)
    ? html`${graceUntil === null || Date.parse(graceUntil) <= now ? null : html`<p class="alert">Rotating again also makes the previous secret stop at once.</p>`}
${alert(message)}
<form method="post" action="${list}/${credential.clientId}/rotate" class="stack">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  ${graceFieldset(
    { grace, graceSeconds },
    'secret',
    'A grace period leaves time to deploy the new secret. For a secret that leaked, choose "It stops at once". Admin tokens it got already keep working until they expire: to stop them too, revoke the credential and make a new one.',
  )}
  <div class="buttons">
    <button type="submit" class="danger">Rotate secret</button>
    <a href="${list}">Cancel</a>
  </div>
</form>`
    : html`<p class="alert">Only the app's owner may rotate the secret of a credential that has ${withheldText(permissions, credential)}: the new secret would hand over what it can do. You may revoke it.</p>
<p><a href="${list}">Back to the credentials</a></p>`
}
</section>`,
  });
}

/** A credential's new secret, shown this once, and what became of the previous one. */
export function rotatedPage(
  frame: PageFrame,
  access: AppPermissions,
  app: AppDescription,
  credential: CredentialDescription,
  rotated: RotatedCredential,
): Html {
  return page({
    title: `New secret of ${credential.name} · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Credentials', access)}
<h2>New secret of ${credential.name}</h2>
<p class="notice" role="status">The secret is rotated. Copy the new one now: it is shown only this once.</p>
${rotatedSecretKeys(rotated)}
${rotationOutcome([replacedSecretOutcome(rotated.previousSecretValidUntil, 'secret')])}
<p><a class="button" href="/portal/apps/${app.appId}/credentials">Back to the credentials</a></p>`,
  });
}

/** Without JavaScript there is no confirm(): revoking asks first, on a page of its own. */
export function revocationPage(
  frame: PageFrame,
  access: AppPermissions,
  once: string,
  app: AppDescription,
  credential: CredentialDescription,
): Html {
  const { csrfToken } = frame;
  const list = `/portal/apps/${app.appId}/credentials`;
  return page({
    title: `Revoke ${credential.name} · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Credentials', access)}
<section class="narrow confirm">
<h2>Revoke ${credential.name}?</h2>
<p>The credential <code>${credential.clientId}</code> is deleted: its secret and every admin token it got stop working at once (on every instance within a second). Server code that uses it gets no token any more. This cannot be undone: a new credential gets a new ClientID.</p>
<form method="post" action="${list}/${credential.clientId}/revoke" class="actions">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  <button type="submit" class="danger">Revoke credential</button>
  <a href="${list}">Cancel</a>
</form>
</section>`,
  });
}
