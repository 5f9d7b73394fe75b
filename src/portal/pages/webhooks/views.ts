import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { MAX_WEBHOOK_URL_LENGTH } from '../../../webhooks/destination.js';
import type { WebhookWithSecret } from '../../../webhooks/service.js';
import {
  MAX_WEBHOOKS_PER_APP,
  WEBHOOK_EVENT_TYPES,
  type DeliveryDescription,
  type WebhookDescription,
  type WebhookEventType,
} from '../../../webhooks/webhook.js';
import { html, type Html } from '../../html.js';
import { csrfField, onceField, page, type PageFrame } from '../../layout.js';
import { utcTime } from '../../time.js';
import { appHeader } from '../common/app-header.js';
import { TYPE_WORDS } from '../events/words.js';
import type { Field, Mistake, WebhookForm } from './form.js';

// The webhooks pages' views: pure functions of what the handlers read, to HTML.

/** The types a webhook may be sent, in groups a person chooses among; a type in none is in "Other". */
const GROUPS: readonly { legend: string; hint: string; types: readonly WebhookEventType[] }[] = [
  {
    legend: 'Alerts',
    hint: 'Something to look at now: a ClientSecret sent from a web page, a burst of refused requests, a credential used from the wrong place or after its expiry.',
    types: ['app.secret_exposed', 'app.refusal_burst', 'credential.refused'],
  },
  {
    legend: 'Keys and settings',
    hint: "Changes to the app's ClientSecret and token settings.",
    types: ['app.secret_rotated', 'app.previous_secret_ended', 'app.configuration_changed'],
  },
  {
    legend: 'People',
    hint: 'Owners, collaborators and invitations.',
    types: [
      'app.owner_changed',
      'app.collaborator_invited',
      'app.collaborator_added',
      'app.collaborator_removed',
      'app.invitation_withdrawn',
    ],
  },
  {
    legend: 'Credentials',
    hint: 'Credentials made, rotated and revoked.',
    types: ['credential.created', 'credential.rotated', 'credential.revoked', 'credential.previous_secret_ended'],
  },
  {
    legend: 'Webhooks',
    hint: 'Webhooks added, deleted and given a new secret (a deleted webhook is not told of its own deletion).',
    types: ['webhook.created', 'webhook.deleted', 'webhook.secret_rotated'],
  },
];

function groupsOfTypes(): typeof GROUPS {
  const grouped = new Set(GROUPS.flatMap((group) => group.types));
  const other = WEBHOOK_EVENT_TYPES.filter((type) => !grouped.has(type));
  return other.length === 0 ? GROUPS : [...GROUPS, { legend: 'Other', hint: 'Further changes to the app.', types: other }];
}

export interface ListState {
  form: WebhookForm;
  mistake?: Mistake | undefined;
  /** The URL of a webhook just deleted, for the notice. */
  deleted?: string | undefined;
}

export interface ListInput extends ListState {
  app: AppDescription;
  access: AppPermissions;
  listed: WebhookDescription[];
  now: number;
  /** The forms' `once` value (`single-use-forms.ts`): one page, one form sent. */
  once: string;
}

const webhooksPath = (appId: string) => `/portal/apps/${appId}/webhooks`;

function typeList(types: readonly string[]): Html {
  return html`<ul class="scopes">${types.map((type) => html`<li><code>${type}</code></li>`)}</ul>`;
}

/** The types a webhook is sent, in words: all of them said as such, most of them by those left out, else each one. */
function typesText(types: readonly string[]): Html {
  if (types.length === WEBHOOK_EVENT_TYPES.length) return html`Every type: the alerts and every change to the app`;
  if (types.length > WEBHOOK_EVENT_TYPES.length / 2) {
    return html`Every type but ${typeList(WEBHOOK_EVENT_TYPES.filter((type) => !types.includes(type)))}`;
  }
  return typeList(types);
}

/** While a rotation's previous secret still signs, until when. */
function previousSecretRow(webhook: WebhookDescription, now: number): Html | null {
  const until = webhook.previousSecretUntil;
  if (until === null || Date.parse(until) <= now) return null;
  return html`<div><dt>Previous secret</dt><dd>Still signs too, until ${utcTime(until)}</dd></div>`;
}

function webhookItem(webhook: WebhookDescription, input: ListInput, csrfToken: string): Html {
  const { app, now, once } = input;
  const base = `${webhooksPath(app.appId)}/${webhook.id}`;
  const headingId = `webhook-${webhook.id}`;
  return html`<li class="credential webhook" aria-labelledby="${headingId}" data-webhook-id="${webhook.id}">
  <h3 id="${headingId}"><code>${webhook.url}</code></h3>
  <dl>
    <div class="wide"><dt>Sends</dt><dd>${typesText(webhook.eventTypes)}</dd></div>
    <div><dt>Created</dt><dd>${utcTime(webhook.createdAt)}</dd></div>
    ${previousSecretRow(webhook, now)}
  </dl>
  <div class="row-actions">
    <a href="${base}" aria-label="Deliveries to ${webhook.url}">Deliveries</a>
    <form method="post" action="${base}/rotate-secret" class="inline">
      ${csrfField(csrfToken)}
      ${onceField(once)}
      <button type="submit" class="link" aria-label="Rotate secret of ${webhook.url}">Rotate secret</button>
    </form>
    <a href="${base}/delete" class="danger-link" aria-label="Delete the webhook to ${webhook.url}">Delete</a>
  </div>
</li>`;
}

/** The list of the app's webhooks and the new-webhook form, with what was typed and what was wrong with it, if anything. */
export function webhooksPage(frame: PageFrame, input: ListInput): Html {
  const { app, access, listed, deleted } = input;
  const { csrfToken } = frame;
  return page({
    title: `Webhooks · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Webhooks', access)}
${deleted === undefined ? null : html`<p class="notice success" role="status">The webhook to <code>${deleted}</code> is deleted: nothing more is sent to it, and deliveries waiting for it are dropped.</p>`}
<h2 id="webhooks-heading">Webhooks</h2>
<p class="lead">Tessera sends the app's events to these URLs as they happen: each one a CloudEvents 1.0 JSON body in a POST, signed as the Standard Webhooks specification says. Only the app's owner sees this page.</p>
${
  listed.length === 0
    ? html`<div class="empty-state">
  <p><strong>No webhooks yet.</strong> Add one to hear of an alert (a leaked ClientSecret, a burst of refused requests) or a change to the app (a rotated secret, new settings, a collaborator added) where your team already looks: a chat, an incident tool, your own backend.</p>
</div>`
    : html`<ul class="credentials webhooks" aria-labelledby="webhooks-heading">${listed.map((webhook) => webhookItem(webhook, input, csrfToken))}</ul>
<p class="hint">Rotating a secret shows the new one once; the current one keeps signing beside it for 24 hours, so that the receiver can take the new one without missing a delivery.</p>`
}
${listed.length >= MAX_WEBHOOKS_PER_APP ? fullNotice(input.mistake) : newWebhookForm(input, csrfToken)}`,
  });
}

/** In place of the form, once the app has as many webhooks as it may: the refusal of a form sent from an older page, if that is what this answers. */
function fullNotice(mistake: Mistake | undefined): Html {
  if (mistake !== undefined) return html`<p class="alert" role="alert" id="webhook-error">${mistake.message}</p>`;
  return html`<p class="notice" role="status">This app has ${MAX_WEBHOOKS_PER_APP} webhooks, as many as an app may have: delete one to add another.</p>`;
}

function newWebhookForm(input: ListInput, csrfToken: string): Html {
  const { app, form, mistake, once } = input;
  const invalid = (field: Field) => (mistake?.field === field ? html` aria-invalid="true"` : null);
  const describedBy = (field: Field, hint: string) => (mistake?.field === field ? `webhook-error ${hint}` : hint);
  let first = true;
  const typeBox = (type: WebhookEventType) => {
    const id = `type-${type.replace(/[^a-z]/g, '-')}`;
    const focus = mistake?.field === 'eventTypes' && first;
    first = false;
    return html`<div class="choice">
        <input type="checkbox" id="${id}" name="eventType" value="${type}"${form.eventTypes.includes(type) ? html` checked` : null}${focus ? html` autofocus` : null}>
        <label for="${id}">${TYPE_WORDS[type]} <code>${type}</code></label>
      </div>`;
  };
  return html`<section class="app-form" id="new-webhook" aria-labelledby="new-webhook-heading">
<h2 id="new-webhook-heading">New webhook</h2>
${mistake === undefined ? null : html`<p class="alert" role="alert" id="webhook-error">${mistake.message}</p>`}
<form method="post" action="${webhooksPath(app.appId)}" class="stack">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  <label for="webhook-url">URL</label>
  <input type="url" id="webhook-url" name="url" required maxlength="${MAX_WEBHOOK_URL_LENGTH}" autocomplete="off" spellcheck="false" autocapitalize="off" inputmode="url" placeholder="https://hooks.example.com/tessera" value="${form.url}" aria-describedby="${describedBy('url', 'webhook-url-hint')}"${invalid('url')}${mistake?.field === 'url' ? html` autofocus` : null}>
  <p class="hint field-hint" id="webhook-url-hint">Where each event is POSTed: an <code>https</code> URL that the internet can reach. It should answer a <code>2xx</code> within 10 seconds (the operator may set another limit); anything else is tried again, for about three days.</p>
  <fieldset class="event-types" aria-describedby="${describedBy('eventTypes', 'event-types-hint')}">
    <legend>Events to send</legend>
    <p class="hint" id="event-types-hint">Every type is ticked: the alerts and every change to the app. Token requests are never sent (thousands a minute); the Events page exports them.</p>
    ${groupsOfTypes().map(
      (group, index) => html`<fieldset class="type-group" aria-describedby="type-group-hint-${index}">
      <legend>${group.legend}</legend>
      <p class="hint" id="type-group-hint-${index}">${group.hint}</p>
      ${group.types.map(typeBox)}
    </fieldset>`,
    )}
  </fieldset>
  <div class="buttons"><button type="submit">Add webhook</button></div>
</form>
</section>`;
}

/** How a receiver checks what it is sent, beside a secret shown once. */
function verificationNote(): Html {
  return html`<section class="verify" aria-labelledby="verify-heading">
<h3 id="verify-heading">Checking what it is sent</h3>
<p>Each delivery is a POST of a CloudEvents 1.0 JSON body, with the headers <code>webhook-id</code> (the same on every retry: drop one you have seen), <code>webhook-timestamp</code> and <code>webhook-signature</code>, as the <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> specification says. Check them with one of its libraries and this secret before trusting the body: in Node, <code>new Webhook(secret).verify(body, headers)</code> of the <code>standardwebhooks</code> package (Svix's <code>svix</code> libraries take the same secret, in many languages). Verify the body as received, before parsing it.</p>
<p>During a rotation each delivery carries two signatures, one per secret: either one passing is enough. The service's <code>docs/webhooks.md</code> says more: the body's fields, the retries, code to start from.</p>
</section>`;
}

/** A new webhook, or one given a new secret: the secret, shown this once. */
export function secretPage(
  frame: PageFrame,
  access: AppPermissions,
  app: AppDescription,
  { webhook, secret }: WebhookWithSecret,
  rotated: boolean,
): Html {
  const title = rotated ? 'New secret of the webhook' : 'New webhook';
  return page({
    title: `${title} · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Webhooks', access)}
<h2>${title}</h2>
<p class="notice" role="status">${
      rotated
        ? html`The secret is rotated. Copy the new one now: it is shown only this once. The previous secret keeps signing beside it until ${utcTime(webhook.previousSecretUntil!)}: give the receiver the new one before then.`
        : html`The webhook is added: events are sent to it from now on. Copy its secret now: it is shown only this once, and belongs in the configuration of the receiver, never in a web page or a mobile app.`
    }</p>
<dl class="settings credential-summary">
  <div><dt>URL</dt><dd><code>${webhook.url}</code></dd></div>
  <div><dt>Secret</dt><dd class="link-box"><code data-copyable="the webhook's secret" data-webhook-secret>${secret}</code></dd></div>
  <div><dt>Sends</dt><dd>${typesText(webhook.eventTypes)}</dd></div>
</dl>
${verificationNote()}
<p><a class="button" href="${webhooksPath(app.appId)}">Back to the webhooks</a></p>`,
  });
}

/** Without JavaScript there is no confirm(): deleting asks first, on a page of its own. */
export function deletionPage(frame: PageFrame, access: AppPermissions, app: AppDescription, webhook: WebhookDescription): Html {
  const { csrfToken } = frame;
  const list = webhooksPath(app.appId);
  return page({
    title: `Delete a webhook · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Webhooks', access)}
<section class="narrow confirm">
<h2>Delete the webhook?</h2>
<p>Nothing more is sent to <code>${webhook.url}</code>, and the deliveries waiting for it are dropped with their history. This cannot be undone: a webhook added again gets a new secret.</p>
<form method="post" action="${list}/${webhook.id}/delete" class="actions">
  ${csrfField(csrfToken)}
  <button type="submit" class="danger">Delete webhook</button>
  <a href="${list}">Cancel</a>
</form>
</section>`,
  });
}

export interface DeliveriesInput {
  app: AppDescription;
  access: AppPermissions;
  webhook: WebhookDescription;
  deliveries: DeliveryDescription[];
  /** The cursor of the page shown, if not the newest. */
  before: number | undefined;
  nextCursor: string | null;
  /** A delivery just sent again, for the notice. */
  resent: number | undefined;
  now: number;
}

const STATE_WORDS: Record<DeliveryDescription['state'], string> = {
  pending: 'Waiting',
  delivered: 'Delivered',
  failed: 'Failed',
};

/** What the receiver answered the last attempt, in words. */
function answerText(delivery: DeliveryDescription): Html | string {
  if (delivery.lastAttemptAt === null) return 'Not tried yet';
  if (delivery.lastStatus === null) return 'No answer';
  return html`<code class="${delivery.lastStatus >= 200 && delivery.lastStatus < 300 ? 'status-ok' : 'status-bad'}">${delivery.lastStatus}</code>`;
}

function deliveryItem(delivery: DeliveryDescription, input: DeliveriesInput, csrfToken: string): Html {
  const { app, webhook } = input;
  const headingId = `delivery-${delivery.id}`;
  const type = delivery.eventType as WebhookEventType;
  return html`<li class="delivery state-${delivery.state}" aria-labelledby="${headingId}" data-delivery-id="${delivery.id}" data-state="${delivery.state}">
  <div class="delivery-head">
    <h3 id="${headingId}">${TYPE_WORDS[type] ?? delivery.eventType} <code>${delivery.eventType}</code></h3>
    <span class="state">${STATE_WORDS[delivery.state]}</span>
  </div>
  <dl>
    <div><dt>Event</dt><dd><a href="/portal/apps/${app.appId}/events/${delivery.eventId}">${utcTime(delivery.createdAt, 'second')}</a></dd></div>
    <div><dt>Attempts</dt><dd>${delivery.attempts}</dd></div>
    <div><dt>Last answer</dt><dd>${answerText(delivery)}${delivery.lastAttemptAt === null ? null : html` <span class="hint">at ${utcTime(delivery.lastAttemptAt, 'second')}</span>`}</dd></div>
    ${delivery.nextAttemptAt === null ? null : html`<div><dt>Next attempt</dt><dd>${utcTime(delivery.nextAttemptAt, 'second')}</dd></div>`}
    ${delivery.lastError === null ? null : html`<div class="wide"><dt>Last error</dt><dd>${delivery.lastError}</dd></div>`}
    ${
      delivery.lastResponse === null || delivery.lastResponse === ''
        ? null
        : html`<div class="wide"><dt>Start of the answer</dt><dd><pre class="answer" tabindex="0" aria-label="Start of the answer to delivery ${delivery.id}">${delivery.lastResponse}</pre></dd></div>`
    }
  </dl>
  <form method="post" action="${webhooksPath(app.appId)}/${webhook.id}/deliveries/${delivery.id}/resend" class="row-actions">
    ${csrfField(csrfToken)}
    <button type="submit" class="secondary" aria-label="Send again: ${TYPE_WORDS[type] ?? delivery.eventType} of ${delivery.createdAt}">Send again</button>
  </form>
</li>`;
}

/** A webhook's deliveries, newest first, a page at a time. */
export function deliveriesPage(frame: PageFrame, input: DeliveriesInput): Html {
  const { app, access, webhook, deliveries, before, nextCursor, resent, now } = input;
  const { csrfToken } = frame;
  const base = `${webhooksPath(app.appId)}/${webhook.id}`;
  return page({
    title: `Deliveries · Webhooks · ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Webhooks', access)}
<nav class="crumbs" aria-label="Back"><a href="${webhooksPath(app.appId)}">Back to the webhooks</a></nav>
${resent === undefined ? null : html`<p class="notice success" role="status">Delivery ${resent} is sent again now, with a new round of attempts.</p>`}
<h2 id="deliveries-heading">Deliveries</h2>
<dl class="settings credential-summary webhook-summary">
  <div><dt>URL</dt><dd><code>${webhook.url}</code></dd></div>
  <div><dt>Sends</dt><dd>${typesText(webhook.eventTypes)}</dd></div>
  ${previousSecretRow(webhook, now)}
</dl>
<p class="lead">Newest first. A delivery that got no <code>2xx</code> is tried again for about three days, then marked failed; <strong>Send again</strong> sends any of them once more, as it was.</p>
${
  deliveries.length === 0
    ? html`<div class="empty-state"><p><strong>${before === undefined ? 'No deliveries yet.' : 'No older deliveries.'}</strong> Each event of the types it sends makes one, as it happens.</p></div>`
    : html`<ol class="deliveries" aria-labelledby="deliveries-heading">${deliveries.map((delivery) => deliveryItem(delivery, input, csrfToken))}</ol>`
}
${
  nextCursor === null && before === undefined
    ? null
    : html`<nav class="pager" aria-label="Pages of deliveries">
  ${before === undefined ? null : html`<a href="${base}">Newest deliveries</a>`}
  ${nextCursor === null ? null : html`<a href="${base}?before=${nextCursor}" rel="next">Older deliveries</a>`}
</nav>`
}`,
  });
}
