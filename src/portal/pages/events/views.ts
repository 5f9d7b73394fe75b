import type { SecretExposure } from '../../../apps/secret-exposure.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { EVENT_SCAN_MAX } from '../../../events/log.js';
import type { EventCountQuery, EventCountsDescription } from '../../../events/counts.js';
import { describeEvent, EVENT_TYPES, type AuditEvent, type EventType } from '../../../events/event.js';
import { MAX_CLIENT_ADDRESS_LENGTH, MAX_EVENT_SPAN_MS } from '../../../events/query.js';
import { html, type Html } from '../../html.js';
import { page, type PageFrame } from '../../layout.js';
import { utcText, utcTime } from '../../time.js';
import { appHeader } from '../common/app-header.js';
import { secretExposureWarnings } from '../common/secret-exposure-warning.js';
import { tokenChart, tokenSeries } from './chart.js';
import {
  fieldText,
  isFiltered,
  RELATIVE_RANGES,
  rangeWords,
  spanText,
  viewQuery,
  type EventView,
  type FormState,
  type RangeName,
  type ViewField,
  type ViewMistake,
} from './form.js';
import { attemptedWords, detailsOf, eventTitle, LISTED_REASONS, reasonExplained, reasonLabel, TYPE_WORDS, whoOf } from './words.js';

// The events pages' views: pure functions of what the handlers read, to HTML.

/** The span of the link from an event to the others from its address around it: this long on either side. */
const AROUND_MS = 30 * 60_000;

/** What the top of the events page shows, above the chart and the list: the warnings and the form. */
export interface EventsTop {
  appId: string;
  appName: string;
  permissions: AppPermissions;
  exposures: readonly SecretExposure[];
  form: FormState;
  now: number;
  mistake?: ViewMistake | undefined;
}

function topOf({ appId, appName, permissions, exposures, form, now, mistake }: EventsTop): Html {
  return html`${appHeader(appId, appName, 'Events', permissions)}
${secretExposureWarnings(appId, exposures, permissions)}
${viewForm(appId, form, now, mistake)}`;
}

/** The events page with a mistake in its form: the form alone, beside what was typed. */
export function mistakenEventsPage(frame: PageFrame, top: EventsTop): Html {
  return page({ title: `Events · ${top.appName}`, ...frame, body: topOf(top) });
}

/** The chart of a range's counts, or why there is none: the app was created after it. */
export type ChartCounts =
  { query: EventCountQuery; counts: EventCountsDescription; createdAt: number } | { query: null; createdAt: number };

/** The chart of the view's range, from the app's creation at the earliest. */
export function chartOf(view: EventView, chart: ChartCounts): Html {
  const { createdAt } = chart;
  const heading = view.range === 'custom' ? capitalised(spanText(view.since, view.until)) : RELATIVE_RANGES[view.range].label;
  if (chart.query === null) {
    return html`<p class="empty" data-no-chart>The app was created ${utcText(createdAt)}, after this range: it has nothing to count there.</p>`;
  }
  const { query, counts } = chart;
  const startsAtCreation = query.since > view.since;
  const span = startsAtCreation
    ? `Since the app was created, ${utcText(createdAt)}`
    : view.range === 'custom'
      ? `From ${spanText(view.since, view.until)}`
      : `In ${rangeWords(view)}`;
  const note = startsAtCreation ? `Since the app was created, ${utcText(createdAt)}: per ${query.per}.` : null;
  return tokenChart(tokenSeries(counts), 'chart-tokens', heading, span, note);
}

export interface EventsList {
  view: EventView;
  /** The cursor of the page shown, when it is not the first. */
  beforeId: number | undefined;
  events: readonly AuditEvent[];
  nextCursor: string | null;
  emails: Map<string, string>;
  chart: Html;
  /** Live updates: a range that ends now, on its first page. */
  live: boolean;
  /** The newest event id the page knows of, where live updates start. */
  newest: number;
}

/** The events page: the form, the chart of the range, and a page of its events. */
export function eventsPage(frame: PageFrame, top: EventsTop, list: EventsList): Html {
  const { appId } = top;
  const { view, beforeId, events, nextCursor, emails, chart, live, newest } = list;
  const links = eventLinks(appId, view);
  const body = html`${topOf(top)}
<h2>Tokens</h2>
<p class="hint">Tokens issued and requests refused, counted for every request of the range${isFiltered(view) ? ' (the type, reason and address filters apply to the list of events below, not to the chart)' : ''}. Refused includes admin attempts throttled (429) after too many wrong secrets: counted, not listed. Many refusals in a short time are someone guessing; a sudden rise in admin tokens can be a leaked secret in use.</p>
<div class="charts" data-charts>${chart}</div>
<h2 id="log">Events</h2>
${viewSummary(appId, view, beforeId !== undefined)}
<p class="hint">Anonymous tokens issued, tokens that revoke themselves, and admin attempts throttled after too many wrong secrets are counted in the chart, not listed one by one. Events are kept for a limited time.</p>
${live ? html`<p class="live-status" role="status" aria-live="polite" data-live-status></p>` : null}
${events.length === 0 ? html`<p class="empty" data-no-events>${emptyText(appId, view, beforeId !== undefined, nextCursor !== null)}</p>` : null}
<ol class="events" ${live ? html`data-live="/portal/apps/${appId}/events/live${viewQuery(view)}" data-newest="${newest}"` : null}>
${events.map((event) => eventItem(event, emails, links))}
</ol>
${pager(appId, view, beforeId, nextCursor)}
${downloads(appId, view)}`;
  return page({ title: `Events · ${top.appName}`, ...frame, body });
}

/** Every event of the range and filters, to take away: links a browser downloads, no script needed. */
function downloads(appId: string, view: EventView): Html {
  const query = viewQuery(view);
  const href = (format: string) => `/portal/apps/${appId}/events/export${query}${query === '' ? '?' : '&'}format=${format}`;
  return html`<h2 id="download">Download</h2>
<p class="hint" id="download-hint">Every event of ${rangeWords(view)} that the filters keep, not only this page's, newest first: CSV for a spreadsheet (the details as JSON in the last column), JSON Lines for a log tool.</p>
<div class="buttons"><a class="button secondary" href="${href('csv')}" download aria-describedby="download-hint">Download CSV</a><a class="button secondary" href="${href('jsonl')}" download aria-describedby="download-hint">Download JSON Lines</a></div>`;
}

/** A live update's new events, newest first, as the list's items. */
export function liveItems(appId: string, view: EventView, newestFirst: readonly AuditEvent[], emails: Map<string, string>): Html {
  const links = eventLinks(appId, view);
  return html`${newestFirst.map((event) => eventItem(event, emails, links))}`;
}

/** One event's page, with the way back to the list it was opened from (`back`). */
export function singleEventPage(
  frame: PageFrame,
  permissions: AppPermissions,
  appId: string,
  appName: string,
  event: AuditEvent,
  emails: Map<string, string>,
  back: string,
): Html {
  const body = eventPage(permissions, appId, appName, event, emails, back);
  return page({ title: `${eventTitle(event)} · Events · ${appName}`, ...frame, body });
}

export function capitalised(text: string): string {
  return `${text[0]!.toUpperCase()}${text.slice(1)}`;
}

const RANGE_CHOICES: readonly [RangeName, string][] = [
  ...Object.entries(RELATIVE_RANGES).map(([name, range]) => [name as RangeName, range.label] as [RangeName, string]),
  ['custom', 'Custom range'],
];

const FIELD_IDS: Record<ViewField, string> = {
  range: 'range-15m',
  from: 'event-from',
  to: 'event-to',
  clientAddress: 'event-address',
};

/**
 * The page's one form, sent with GET: the range (a choice of ranges ending now, or a custom range
 * from one instant to another, in UTC like every time of the portal), and the list's filters.
 */
function viewForm(appId: string, state: FormState, now: number, mistake: ViewMistake | undefined): Html {
  const invalid = (field: ViewField) =>
    mistake?.field === field
      ? html` aria-invalid="true" aria-describedby="events-view-error ${field === 'from' || field === 'to' ? 'range-hint' : `${FIELD_IDS[field]}-hint`}"`
      : null;
  const described = (field: ViewField, hint: string) => (mistake?.field === field ? null : html` aria-describedby="${hint}"`);
  const focus = (field: ViewField) => (mistake?.field === field ? html` autofocus` : null);
  const reasons = Object.entries(LISTED_REASONS);
  if (state.reason !== '' && !Object.hasOwn(LISTED_REASONS, state.reason)) reasons.push([state.reason, state.reason]);
  const checkedRange = RANGE_CHOICES.some(([name]) => name === state.range) ? state.range : null;
  return html`<form method="get" action="/portal/apps/${appId}/events" class="events-view" aria-label="Time range and filters" data-events-view>
${mistake === undefined ? null : html`<p class="alert" role="alert" id="events-view-error">${mistake.message}</p>`}
<fieldset class="range">
  <legend>Time range</legend>
  <div class="range-choices">
    ${RANGE_CHOICES.map(
      ([name, label]) =>
        html`<div class="choice"><input type="radio" id="range-${name}" name="range" value="${name}"${name === checkedRange ? html` checked` : null}${name === 'custom' ? null : focus('range')}${mistake?.field === 'range' && name === '15m' ? html` aria-invalid="true" aria-describedby="events-view-error"` : null}><label for="range-${name}">${label}</label></div>`,
    )}
  </div>
  <div class="custom-range">
    <div class="field"><label for="event-from">From (UTC)</label><input type="datetime-local" id="event-from" name="from" value="${state.from}"${described('from', 'range-hint')}${invalid('from')}${focus('from')}></div>
    <div class="field"><label for="event-to">To (UTC)</label><input type="datetime-local" id="event-to" name="to" value="${state.to}"${described('to', 'range-hint')}${invalid('to')}${focus('to')}></div>
  </div>
  <p class="hint" id="range-hint">In UTC, not your own time zone: it is <span class="nowrap">${utcText(now)}</span> now. From is included, To is not; ${MAX_EVENT_SPAN_MS / 86_400_000} days at most.</p>
</fieldset>
<div class="filters">
  <div class="field"><label for="event-type">Type</label><select id="event-type" name="type">
    <option value=""${state.type === '' ? html` selected` : null}>All types</option>
    ${EVENT_TYPES.map((option) => html`<option value="${option}"${option === state.type ? html` selected` : null}>${TYPE_WORDS[option]}</option>`)}
  </select></div>
  <div class="field"><label for="event-reason">Reason</label><select id="event-reason" name="reason">
    <option value=""${state.reason === '' ? html` selected` : null}>Any reason</option>
    ${reasons.map(([code, words]) => html`<option value="${code}"${code === state.reason ? html` selected` : null}>${words}</option>`)}
  </select></div>
  <div class="field"><label for="event-address">Client address</label><input type="text" id="event-address" name="clientAddress" value="${state.clientAddress}" maxlength="${MAX_CLIENT_ADDRESS_LENGTH}" autocomplete="off" spellcheck="false" autocapitalize="off"${described('clientAddress', 'event-address-hint')}${invalid('clientAddress')}${focus('clientAddress')}><p class="hint" id="event-address-hint">As events give it, such as 203.0.113.7 or 2001:db8::1</p></div>
</div>
<div class="buttons"><button type="submit">Show</button><a href="/portal/apps/${appId}/events">Reset</a></div>
</form>`;
}

/** The range and the filters in a sentence above the list, and a way to drop the filters. */
function viewSummary(appId: string, view: EventView, older: boolean): Html {
  const parts: Html[] = [];
  if (view.type !== undefined) parts.push(html` of type <strong>${TYPE_WORDS[view.type]}</strong>`);
  if (view.reason !== undefined) parts.push(html` with the reason <strong>${LISTED_REASONS[view.reason] ?? view.reason}</strong>`);
  if (view.clientAddress !== undefined) parts.push(html` from <strong>${view.clientAddress}</strong>`);
  const range =
    view.range === 'custom'
      ? html`from <strong>${spanText(view.since, view.until)}</strong>`
      : html`of <strong>${rangeWords(view)}</strong>`;
  const clear = isFiltered(view)
    ? html` <a href="/portal/apps/${appId}/events${viewQuery(view, { type: '', reason: '', clientAddress: '' })}">Every event of this range</a>`
    : null;
  const when = older ? 'older ones, ' : '';
  const liveness = view.range === 'custom' ? ' A custom range is not updated live.' : '';
  return html`<p class="view-summary" data-view-summary>Events ${range}${parts}, ${when}newest first.${liveness}${clear}</p>`;
}

function emptyText(appId: string, view: EventView, older: boolean, readOn: boolean): Html | string {
  // A filter's read stops after so many of the app's events (`EVENT_SCAN_MAX`): the next page reads on.
  if (readOn)
    return `None ${older ? 'of the older events' : 'of the newest events'} read for this page (${EVENT_SCAN_MAX.toLocaleString('en')} at most) is like these; "Older events" reads on.`;
  if (older) return 'No older events.';
  if (view.type === 'token.throttled') return 'Admin attempts throttled after too many wrong secrets are counted in the chart, not listed.';
  const what = isFiltered(view) ? 'No events like these' : 'No events';
  const range = view.range === 'custom' ? `from ${spanText(view.since, view.until)}` : `in ${rangeWords(view)}`;
  if (view.range !== '30d' && view.range !== 'custom') {
    return html`${what} ${range}. <a href="/portal/apps/${appId}/events${viewQuery(view, { range: '30d' })}">The last 30 days</a>`;
  }
  return isFiltered(view) || view.range === 'custom' ? `${what} ${range}.` : `${what} ${range}. They appear here as tokens are asked for.`;
}

function pager(appId: string, view: EventView, beforeId: number | undefined, nextCursor: string | null): Html | null {
  if (nextCursor === null && beforeId === undefined) return null;
  const base = `/portal/apps/${appId}/events`;
  return html`<nav class="pager" aria-label="Pages of events">
  ${beforeId === undefined ? null : html`<a href="${base}${viewQuery(view)}">Newest events</a>`}
  ${nextCursor === null ? null : html`<a href="${`${base}${viewQuery(view, { cursor: nextCursor })}`}" rel="next">Older events</a>`}
</nav>`;
}

/** Where an event's title and address lead: its own page, and the list of the same range from that address. */
export interface EventLinks {
  event(id: number): string;
  address(address: string): string;
}

function eventLinks(appId: string, view: EventView): EventLinks {
  const base = `/portal/apps/${appId}/events`;
  return {
    event: (id) => `${base}/${id}${viewQuery(view)}`,
    address: (address) => `${base}${viewQuery(view, { clientAddress: address })}`,
  };
}

const CLASSES: Partial<Record<EventType, string>> = {
  'token.refused': 'refused',
  'credential.refused': 'refused',
  'app.secret_exposed': 'exposed',
};

/** One event as a list item: what (a link to its page), when, who, from where (a link to the others from there), and its details in words. */
export function eventItem(event: AuditEvent, emails: Map<string, string>, links: EventLinks): Html {
  const details = detailsOf(event, emails);
  const from =
    event.clientAddress === null ? 'the command line' : html`<a href="${links.address(event.clientAddress)}">${event.clientAddress}</a>`;
  return html`<li class="event ${CLASSES[event.type] ?? ''}" data-event-id="${event.id}" data-type="${event.type}">
  <p class="event-head"><strong class="event-title"><a href="${links.event(event.id)}">${eventTitle(event)}</a></strong> ${utcTime(event.at, 'second')}</p>
  <p class="event-who"><span>By ${whoOf(event, emails)}</span> <span>from ${from}</span></p>
  ${details.length === 0 ? null : html`<ul class="event-details">${details.map((detail) => html`<li>${detail}</li>`)}</ul>`}
</li>`;
}

/**
 * One event's page: every field of it in words (what, when, who, what a refusal asked for, from
 * where with links to the other events from that address, why it was refused, each detail), and
 * the event as the API gives it.
 */
function eventPage(
  permissions: AppPermissions,
  appId: string,
  appName: string,
  event: AuditEvent,
  emails: Map<string, string>,
  back: string,
): Html {
  const base = `/portal/apps/${appId}/events`;
  // The reason has its own row, explained.
  const details = detailsOf(event, emails, { withReason: false });
  const attempted = attemptedWords(event);
  const reason = typeof event.details.reason === 'string' ? event.details.reason : null;
  const explained = reasonExplained(event);
  const address = event.clientAddress;
  const around = (near: number) =>
    new URLSearchParams({ range: 'custom', from: fieldText(near - AROUND_MS), to: fieldText(near + AROUND_MS) });
  const roundedAt = event.at - (event.at % 60_000);
  const addressLinks =
    address === null
      ? null
      : html`<ul class="plain address-links">
      <li><a href="${base}?${new URLSearchParams({ range: '30d', clientAddress: address }).toString()}">Every event from ${address} in the last 30 days</a></li>
      <li><a href="${base}?${around(roundedAt).toString()}&${new URLSearchParams({ clientAddress: address }).toString()}">Events from ${address} within 30 minutes of this one</a></li>
    </ul>`;
  const described = JSON.stringify(describeEvent(event), null, 2);
  const who = whoOf(event, emails);
  return html`${appHeader(appId, appName, 'Events', permissions)}
<nav class="crumbs" aria-label="Back"><a href="${back}">Back to the events</a></nav>
<h2 class="event-page-title${CLASSES[event.type] === undefined ? '' : ` ${CLASSES[event.type]}`}" data-event-id="${event.id}" data-type="${event.type}">${eventTitle(event)}</h2>
<dl class="settings event-facts">
  <div><dt>What</dt><dd>${TYPE_WORDS[event.type]} <code>${event.type}</code></dd></div>
  <div><dt>When</dt><dd>${utcTime(event.at, 'second')} <span class="hint">(${new Date(event.at).toISOString()})</span></dd></div>
  <div><dt>Who</dt><dd>${who.includes('@') ? who : capitalised(who)}</dd></div>
  ${attempted === null ? null : html`<div><dt>Asked for</dt><dd>${capitalised(attempted)}</dd></div>`}
  <div><dt>From</dt><dd class="event-from">${address === null ? 'The command line: no client address' : html`<code>${address}</code>${addressLinks}`}</dd></div>
  ${
    reason === null
      ? null
      : html`<div><dt>Reason</dt><dd class="event-reason"><p><strong>${reasonLabel(event, reason)}</strong> <code>${reason}</code></p>${
          explained === null
            ? null
            : html`
<p>${explained}</p>`
        }</dd></div>`
  }
  ${details.length === 0 ? null : html`<div><dt>${event.type === 'token.revoked' ? 'What it did' : 'Details'}</dt><dd><ul class="event-details-list">${details.map((detail) => html`<li>${capitalised(detail)}</li>`)}</ul></dd></div>`}
  <div><dt>Event id</dt><dd><code>${event.id}</code></dd></div>
</dl>
<details class="event-json">
<summary>The event as the API gives it</summary>
<pre class="commands">${described}</pre>
</details>`;
}
