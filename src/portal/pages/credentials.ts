import { codeText } from './code-text.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDescription } from '../../apps/app.js';
import type { CreatedCredential, RotatedCredential } from '../../apps/credentials.js';
import { MAX_ALLOWED_ADDRESSES } from '../../credentials/addresses.js';
import { CREDENTIAL_CLIENT_ID_PATTERN, MAX_CREDENTIAL_NAME_LENGTH, type CredentialDescription } from '../../credentials/credential.js';
import { RFC3339_DATE_TIME, type NewCredentialFields } from '../../credentials/input.js';
import { BUILT_IN_SCOPES, MAX_SCOPE_LENGTH, MAX_SCOPES, type BuiltInScope } from '../../credentials/scopes.js';
import type { AppRole } from '../../developers/roles.js';
import { isTesseraError, TesseraError } from '../../errors.js';
import type { RequestContext } from '../../request-context.js';
import { serviceBaseUrl } from '../base-url.js';
import { html, type Html } from '../html.js';
import { alert, csrfField, onceField, page } from '../layout.js';
import { issueOnce, useOnce } from '../once.js';
import { formField, type PortalContext } from '../context.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, sessionOf } from '../respond.js';
import { utcText, utcTime } from '../time.js';
import { mistakeIn, type AppParams } from './app-common.js';
import { appHeader } from './app-nav.js';
import { credentialCommands, credentialNodeScript } from '../../apps/snippets.js';
import {
  endedNotice,
  endPreviousSecretForm,
  graceFieldset,
  graceSecondsOf,
  replacedSecretOutcome,
  rotatedSecretKeys,
  rotationOutcome,
} from './rotation.js';
import { keyRow } from './keys.js';
import { setSecretStep } from './set-secret.js';

type CredentialParams = { Params: { appId: string; clientId: string } };

/** What each built-in scope lets a credential's admin tokens do, in a line. */
const SCOPE_HINTS: Record<BuiltInScope, string> = {
  'app:read': 'See the app: its name, its public keys and its token settings (never a secret).',
  'configuration:read': 'Read the token settings.',
  'configuration:write': 'Change the token settings.',
  'events:read': 'Read the events and their counts.',
  'tokens:introspect': 'Ask whether a token is valid, and whose it is (introspection).',
  'tokens:revoke': 'Revoke other tokens, and every token of a kind at once.',
  'credentials:manage': 'List, create, rotate and revoke credentials, as this page does.',
};
const OWNER_ONLY_SCOPE: BuiltInScope = 'credentials:manage';

/** The form's fields, as typed: its own scopes space-separated, its addresses one a line. */
interface CredentialForm {
  name: string;
  scopes: string[];
  ownScopes: string;
  expiresAt: string;
  allowFrom: string;
}

const EMPTY_FORM: CredentialForm = { name: '', scopes: [], ownScopes: '', expiresAt: '', allowFrom: '' };

/** The field a mistake is about (the service names it first in its message), for the words and the focus. */
type Field = 'name' | 'scopes' | 'expiresAt' | 'allowFrom';
const FIELD_WORDS: Record<Field, string> = {
  name: 'The name',
  scopes: 'The list of scopes',
  expiresAt: 'The expiry',
  allowFrom: 'The list of allowed addresses',
};
interface Mistake {
  field?: Field;
  message: string;
}

/** A mistake the page finds itself, in its own words. */
class FormMistake extends Error {
  constructor(
    readonly field: Field,
    message: string,
  ) {
    super(message);
  }
}

/** The longest the typed fields may be: every scope and every address at its longest, and room to spare. */
const MAX_OWN_SCOPES_TEXT = MAX_SCOPES * (MAX_SCOPE_LENGTH + 1);
const MAX_ADDRESSES_TEXT = MAX_ALLOWED_ADDRESSES * 52;
/** The form's body at its longest, form-encoded (`:` and `/` as `%3A`, `%2F`): above the server's limit for other bodies. */
const CREDENTIAL_BODY_LIMIT_BYTES = 32 * 1024;

/** `2027-01-31T09:30` (what `<input type=datetime-local>` sends), to the second or less too: taken as UTC. */
const LOCAL_DATE_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?$/;

/**
 * An app's credentials (docs/portal.md, "Credentials"): further ClientIDs whose admin tokens may do
 * only what their scopes say. The owner and the collaborators list, create, rotate and revoke them
 * (`manage_credentials`); only the owner gives (or rotates a credential that has)
 * `credentials:manage`, which `CredentialService` checks. A new credential's secret, and a rotated
 * one, is shown once, on the answer to the form.
 */
export const credentialsPages: FastifyPluginAsync<PortalContext> = async (
  app,
  { members, apps, credentials, events, clock, publicUrl, secureCookies },
) => {
  const once = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  /** The developer's role on the app, if it may manage its credentials (404 for no member, as for no app). */
  const authorize = (request: FastifyRequest, appId: string) =>
    members.authorize(appId, sessionOf(request).developer.id, 'manage_credentials');

  /** The credential, or 404. */
  async function credentialOf(appId: string, clientId: string, context: RequestContext): Promise<CredentialDescription> {
    const found = CREDENTIAL_CLIENT_ID_PATTERN.test(clientId)
      ? (await credentials.list(appId, context)).find((credential) => credential.clientId === clientId)
      : undefined;
    if (found === undefined) throw new TesseraError('NOT_FOUND', 'This app has no credential with this ClientID.');
    return found;
  }

  /** The list and the new-credential form, with what was typed and what was wrong with it, if anything. */
  async function listPage(request: FastifyRequest, reply: FastifyReply, appId: string, role: AppRole, state: ListState) {
    const context = asDeveloper(request);
    const [described, listed, people] = await Promise.all([
      apps.show(appId, context),
      credentials.list(appId, context),
      members.membersOf(appId, context),
    ]);
    const emails = new Map(people.map((person) => [person.developerId, person.email]));
    return credentialsPage(request, reply, {
      ...state,
      app: described,
      role,
      listed,
      emails,
      now: clock.now(),
      once: issueOnce(reply, once),
    });
  }

  app.get<AppParams & { Querystring: { revoked?: unknown } }>('/apps/:appId/credentials', async (request, reply) => {
    const { appId } = request.params;
    const role = await authorize(request, appId);
    const revoked = await revokedNotice(appId, request.query.revoked, asDeveloper(request));
    return sendPage(reply, await listPage(request, reply, appId, role, { form: EMPTY_FORM, revoked }));
  });

  const createRoute = { onRequest: requireSession, bodyLimit: CREDENTIAL_BODY_LIMIT_BYTES, preValidation: csrfCheck(app) };
  app.post<AppParams>('/apps/:appId/credentials', createRoute, async (request, reply) => {
    const { appId } = request.params;
    const role = await authorize(request, appId);
    const sent = useOnce(request, reply, once);
    const form = credentialFormOf(request);
    const again = async (error: unknown) => {
      const [status, mistake] = mistakeOf(error);
      return sendPage(reply, await listPage(request, reply, appId, role, { form, mistake }), status);
    };
    let fields: NewCredentialFields;
    try {
      fields = credentialFields(form);
    } catch (error) {
      return again(error);
    }
    let created: CreatedCredential;
    try {
      created = await credentials.create(appId, fields, asDeveloper(request), sent);
    } catch (error) {
      return again(error);
    }
    const described = await apps.show(appId, asDeveloper(request));
    const base = serviceBaseUrl(request, publicUrl);
    return sendPage(reply, createdPage(request, reply, described, created, base, clock.now()), 201);
  });

  app.get<CredentialParams & { Querystring: { ended?: unknown } }>('/apps/:appId/credentials/:clientId/rotate', async (request, reply) => {
    const { appId, clientId } = request.params;
    const role = await authorize(request, appId);
    const context = asDeveloper(request);
    const credential = await credentialOf(appId, clientId, context);
    const described = await apps.show(appId, context);
    const input = { app: described, credential, role, now: clock.now(), grace: '3600', graceSeconds: '', ended: request.query.ended };
    return sendPage(reply, rotationPage(request, reply, issueOnce(reply, once), input));
  });

  app.post<CredentialParams>(
    '/apps/:appId/credentials/:clientId/end-previous-secret',
    { preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId, clientId } = request.params;
      await authorize(request, appId);
      const { endedPreviousSecretValidUntil } = await credentials.endPreviousSecret(appId, clientId, asDeveloper(request));
      const ended = endedPreviousSecretValidUntil === null ? 'none' : 'yes';
      return seeOther(reply, `/portal/apps/${appId}/credentials/${clientId}/rotate?ended=${ended}`);
    },
  );

  app.post<CredentialParams>('/apps/:appId/credentials/:clientId/rotate', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId, clientId } = request.params;
    const role = await authorize(request, appId);
    const context = asDeveloper(request);
    const credential = await credentialOf(appId, clientId, context);
    const sent = useOnce(request, reply, once);
    const described = await apps.show(appId, context);
    const grace = (formField(request, 'grace') ?? '').slice(0, 20);
    const graceSeconds = (formField(request, 'graceSeconds') ?? '').trim().slice(0, 20);
    let options: { graceSeconds?: number };
    try {
      const seconds = graceSecondsOf({ grace, graceSeconds }, 'secret');
      options = seconds === undefined ? {} : { graceSeconds: seconds };
    } catch (error) {
      const input = { app: described, credential, role, now: clock.now(), grace, graceSeconds };
      return sendPage(reply, rotationPage(request, reply, issueOnce(reply, once), input, mistakeIn(error)), 400);
    }
    const rotated = await credentials.rotate(appId, clientId, { ...options, once: sent }, context);
    return sendPage(reply, rotatedPage(request, reply, described, credential, rotated));
  });

  // Without JavaScript there is no confirm(): revoking asks first, on a page of its own.
  app.get<CredentialParams>('/apps/:appId/credentials/:clientId/revoke', async (request, reply) => {
    const { appId, clientId } = request.params;
    await authorize(request, appId);
    const context = asDeveloper(request);
    const credential = await credentialOf(appId, clientId, context);
    const described = await apps.show(appId, context);
    return sendPage(reply, revocationPage(request, reply, issueOnce(reply, once), described, credential));
  });

  app.post<CredentialParams>('/apps/:appId/credentials/:clientId/revoke', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId, clientId } = request.params;
    await authorize(request, appId);
    const context = asDeveloper(request);
    await credentialOf(appId, clientId, context);
    await credentials.revoke(appId, clientId, context, useOnce(request, reply, once));
    return seeOther(reply, `/portal/apps/${appId}/credentials?revoked=${clientId}`);
  });

  /**
   * What the list says after a revocation, from the app's audit log (`credential.revoked`, which
   * the revocation wrote with it): its name and how many tokens went with it. The address only
   * names the credential, so nothing it says comes from the address itself.
   */
  async function revokedNotice(appId: string, clientId: unknown, context: RequestContext): Promise<RevokedNotice | undefined> {
    if (typeof clientId !== 'string' || !CREDENTIAL_CLIENT_ID_PATTERN.test(clientId)) return undefined;
    const { events: revocations } = await events.list(appId, { type: 'credential.revoked', limit: 60 }, context);
    const event = revocations.find((candidate) => candidate.details.clientId === clientId);
    if (event === undefined) return undefined;
    const { name, tokensRevoked } = event.details;
    const madeNames = revocations
      .filter((candidate) => candidate.details.revokedWith === clientId && candidate.id !== event.id)
      .map((candidate) => (typeof candidate.details.name === 'string' ? candidate.details.name : String(candidate.details.clientId)));
    return {
      name: typeof name === 'string' ? name : clientId,
      tokensRevoked: typeof tokensRevoked === 'number' ? tokensRevoked : 0,
      madeNames,
    };
  }
};

function credentialFormOf(request: FastifyRequest): CredentialForm {
  const body = request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
  const field = (name: string, max: number) => (formField(request, name) ?? '').slice(0, max);
  return {
    name: field('name', MAX_CREDENTIAL_NAME_LENGTH * 4),
    scopes: body
      .getAll('scope')
      .slice(0, BUILT_IN_SCOPES.length * 2)
      .map((scope) => scope.slice(0, MAX_SCOPE_LENGTH + 1)),
    ownScopes: field('ownScopes', MAX_OWN_SCOPES_TEXT + 1),
    expiresAt: field('expiresAt', 40).trim(),
    allowFrom: field('allowFrom', MAX_ADDRESSES_TEXT + 1),
  };
}

/** The new credential's fields, as `CredentialService.create` takes them; a mistake it would not name well, in the form's words. */
function credentialFields(form: CredentialForm): NewCredentialFields {
  if (form.ownScopes.length > MAX_OWN_SCOPES_TEXT) throw new FormMistake('scopes', `A credential may have at most ${MAX_SCOPES} scopes.`);
  if (form.allowFrom.length > MAX_ADDRESSES_TEXT) {
    throw new FormMistake('allowFrom', `The list of allowed addresses may have at most ${MAX_ALLOWED_ADDRESSES} entries.`);
  }
  const scopes = [...form.scopes, ...form.ownScopes.split(/\s+/).filter((scope) => scope !== '')];
  if (scopes.length === 0) {
    throw new FormMistake('scopes', "Choose at least one scope: tick one of Tessera's, or type one of the app's own.");
  }
  const allowFrom = form.allowFrom
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return { name: form.name, scopes, expiresAt: expiryOf(form.expiresAt), allowFrom };
}

/** The expiry typed, as RFC 3339: a date and time without a zone is UTC, as the page says. */
function expiryOf(typed: string): string | undefined {
  if (typed === '') return undefined;
  const local = LOCAL_DATE_TIME.exec(typed);
  if (local !== null) return `${local[1]}${local[2] ?? ':00'}Z`;
  if (RFC3339_DATE_TIME.test(typed)) return typed;
  throw new FormMistake('expiresAt', 'The expiry must be a date and a time in UTC, such as 2027-01-31T09:30, or nothing.');
}

/** The status and the words of a mistake in the form (or of a refusal it is shown with); anything else is thrown on. */
function mistakeOf(error: unknown): [number, Mistake] {
  if (error instanceof FormMistake) return [400, { field: error.field, message: error.message }];
  if (!isTesseraError(error)) throw error;
  if (error.status === 400) {
    // `CredentialService`'s messages start with the API's name of the field: `expiresAt is in the past…`.
    const field = (Object.keys(FIELD_WORDS) as Field[]).find((name) => error.message.startsWith(`${name} `));
    if (field === undefined) return [400, { message: error.message }];
    return [400, { field, message: `${FIELD_WORDS[field]}${error.message.slice(field.length)}` }];
  }
  // A collaborator who gave credentials:manage all the same (403); an app with as many credentials as it may have (409).
  if (error.code === 'FORBIDDEN') return [403, { field: 'scopes', message: error.message }];
  if (error.code === 'CONFLICT') return [409, { message: error.message }];
  throw error;
}

interface RevokedNotice {
  name: string;
  tokensRevoked: number;
  /** The credentials its admin tokens made, revoked with it. */
  madeNames: string[];
}

interface ListState {
  form: CredentialForm;
  mistake?: Mistake;
  revoked?: RevokedNotice | undefined;
}

interface ListInput extends ListState {
  app: AppDescription;
  role: AppRole;
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

/** Whether the developer may rotate it: a collaborator may not hand over `credentials:manage`. */
function mayRotate(role: AppRole, credential: CredentialDescription): boolean {
  return role === 'owner' || !credential.scopes.includes(OWNER_ONLY_SCOPE);
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
  const { app, role, emails, now } = input;
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
      mayRotate(role, credential)
        ? html`<a href="${base}/rotate" aria-label="Rotate secret of ${credential.name}">Rotate secret</a>`
        : html`<span class="hint">Only the owner rotates it: it has <code>${OWNER_ONLY_SCOPE}</code>.</span>`
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

function credentialsPage(request: FastifyRequest, reply: FastifyReply, input: ListInput) {
  const { app, listed, revoked } = input;
  const csrfToken = reply.generateCsrf();
  return page({
    title: `Credentials · ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`${appHeader(app.appId, app.name, 'Credentials')}
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
  const { app, role, form, mistake, now, once } = input;
  const owner = role === 'owner';
  const invalid = (field: Field) => (mistake?.field === field ? html` aria-invalid="true"` : null);
  const describedBy = (field: Field, hint: string) => (mistake?.field === field ? `credential-error ${hint}` : hint);
  const focus = (field: Field) => (mistake?.field === field ? html` autofocus` : null);
  // The first field of the mistake has the focus: the own scopes when they were typed, else the first box.
  const focusScopes = mistake?.field === 'scopes' && form.ownScopes.trim() === '';
  const scopeBox = (scope: BuiltInScope, index: number) => {
    const id = `scope-${scope.replace(/[^a-z]/g, '-')}`;
    const disabled = scope === OWNER_ONLY_SCOPE && !owner;
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

function createdPage(
  request: FastifyRequest,
  reply: FastifyReply,
  app: AppDescription,
  created: CreatedCredential,
  base: string,
  now: number,
) {
  // As the quickstarts (src/apps/snippets.ts): short lines, the secret from the environment, 15 minutes.
  const values = { baseUrl: base, appId: app.appId, clientId: created.clientId };
  const command = credentialCommands(values);
  const script = credentialNodeScript({ ...values, scopes: created.scopes });
  return page({
    title: `New credential · ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken: reply.generateCsrf(),
    body: html`${appHeader(app.appId, app.name, 'Credentials')}
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

interface RotationInput {
  app: AppDescription;
  credential: CredentialDescription;
  role: AppRole;
  now: number;
  grace: string;
  graceSeconds: string;
  /** The `ended` of the page's address, after its end-of-grace form. */
  ended?: unknown;
}

function rotationPage(request: FastifyRequest, reply: FastifyReply, once: string, input: RotationInput, message?: string) {
  const { app, credential, role, now, grace, graceSeconds, ended } = input;
  const csrfToken = reply.generateCsrf();
  const list = `/portal/apps/${app.appId}/credentials`;
  const graceUntil = credential.previousSecretValidUntil;
  return page({
    title: `Rotate the secret of ${credential.name} · ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`${appHeader(app.appId, app.name, 'Credentials')}
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
  mayRotate(role, credential)
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
    : html`<p class="alert">Only the app's owner may rotate the secret of a credential that has <code>${OWNER_ONLY_SCOPE}</code>: the new secret would hand over what it can do. You may revoke it.</p>
<p><a href="${list}">Back to the credentials</a></p>`
}
</section>`,
  });
}

function rotatedPage(
  request: FastifyRequest,
  reply: FastifyReply,
  app: AppDescription,
  credential: CredentialDescription,
  rotated: RotatedCredential,
) {
  return page({
    title: `New secret of ${credential.name} · ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken: reply.generateCsrf(),
    body: html`${appHeader(app.appId, app.name, 'Credentials')}
<h2>New secret of ${credential.name}</h2>
<p class="notice" role="status">The secret is rotated. Copy the new one now: it is shown only this once.</p>
${rotatedSecretKeys(rotated)}
${rotationOutcome([replacedSecretOutcome(rotated.previousSecretValidUntil, 'secret')])}
<p><a class="button" href="/portal/apps/${app.appId}/credentials">Back to the credentials</a></p>`,
  });
}

function revocationPage(
  request: FastifyRequest,
  reply: FastifyReply,
  once: string,
  app: AppDescription,
  credential: CredentialDescription,
) {
  const csrfToken = reply.generateCsrf();
  const list = `/portal/apps/${app.appId}/credentials`;
  return page({
    title: `Revoke ${credential.name} · ${app.name}`,
    developer: sessionOf(request).developer,
    csrfToken,
    body: html`${appHeader(app.appId, app.name, 'Credentials')}
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
