import type { FastifyPluginAsync } from 'fastify';
import { EVENT_SCAN_MAX } from '../../events/log.js';
import { notFound } from '../../error-catalogue.js';
import { TesseraError } from '../../errors.js';
import { describeEvent, EVENT_TYPES, type AuditEvent, type EventType } from '../../events/event.js';
import { MAX_CLIENT_ADDRESS_LENGTH, MAX_EVENT_SPAN_MS, parseEventPageQuery } from '../../events/query.js';
import { permissionsOf } from '../../developers/roles.js';
import type { RequestContext } from '../../request-context.js';
import { chartQuery, tokenChart, tokenSeries } from '../chart.js';
import type { BackgroundRouteConfig, PortalContext } from '../context.js';
import {
  fieldText,
  isFiltered,
  listFilter,
  parseEventView,
  RELATIVE_RANGES,
  rangeWords,
  spanText,
  viewQuery,
  ViewMistake,
  type EventView,
  type RangeName,
  type RawView,
  type ViewField,
} from '../event-view.js';
import { html, type Html } from '../html.js';
import { page } from '../layout.js';
import { asDeveloper, requireSession, sendPage, sessionOf } from '../respond.js';
import { utcText, utcTime } from '../time.js';
import { appHeader } from './common/app-header.js';
import { attemptedWords, detailsOf, eventTitle, LISTED_REASONS, reasonExplained, reasonLabel, TYPE_WORDS, whoOf } from './event-words.js';
import { secretExposureWarnings } from './common/secret-exposure-warning.js';

type EventsRequest = {
  Params: { appId: string };
  Querystring: Record<string, string | string[] | undefined>;
};

type EventRequest = {
  Params: { appId: string; eventId: string };
  Querystring: Record<string, string | string[] | undefined>;
};

/** Events on a page of the log. */
const PAGE_SIZE = 25;
/** New events one live update brings at most; the next one brings the rest. */
const LIVE_BATCH = 100;
/** The span of the link from an event to the others from its address around it: this long on either side. */
const AROUND_MS = 30 * 60_000;

/**
 * An app's events page, for an investigation: a time range (the last 15 minutes to the last 30
 * days, or from one instant to another) and filters by type, reason and client address, in one GET
 * form; a chart of tokens issued and refused over the range, never from before the app was created,
 * in minutes, hours or days as the range allows; the events of the range, newest first, paged with
 * the log's cursor, each linking to its own page; and a warning while the ClientSecret is known to
 * have leaked into a web page. `…/events/live` gives what is newer than a page of a range that ends
 * now shows, for the script to add without a reload; the page works without it.
 */
export const eventsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, clock }) => {
  app.addHook('preHandler', requireSession);

  /** Member emails by developer id, so that events name the developers who are still members. */
  const emailsOf = async (appId: string, context: RequestContext) =>
    new Map((await members.membersOf(appId, context)).map((member) => [member.developerId, member.email]));

  /** The chart of the view's range, from the app's creation at the earliest. */
  const chartOf = async (appId: string, view: EventView, createdAt: number, context: RequestContext): Promise<Html> => {
    const query = chartQuery(view.since, view.until, createdAt);
    const heading = view.range === 'custom' ? capitalised(spanText(view.since, view.until)) : RELATIVE_RANGES[view.range].label;
    if (query === null) {
      return html`<p class="empty" data-no-chart>The app was created ${utcText(createdAt)}, after this range: it has nothing to count there.</p>`;
    }
    const counts = await events.counts(appId, query, context);
    const startsAtCreation = query.since > view.since;
    const span = startsAtCreation
      ? `Since the app was created, ${utcText(createdAt)}`
      : view.range === 'custom'
        ? `From ${spanText(view.since, view.until)}`
        : `In ${rangeWords(view)}`;
    const note = startsAtCreation ? `Since the app was created, ${utcText(createdAt)}: per ${query.per}.` : null;
    return tokenChart(tokenSeries(counts), 'chart-tokens', heading, span, note);
  };

  app.get<EventsRequest>('/apps/:appId/events', async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId } = request.params;
    const role = await members.authorize(appId, developer.id, 'view_events');
    const raw = rawViewOf(request.query);
    const { beforeId } = parseEventPageQuery({ cursor: single(request.query.cursor, 'cursor') });
    const context = asDeveloper(request);
    const now = clock.now();
    const [view, mistake] = viewOrMistake(raw, now);
    const shown = apps.show(appId, context);
    const [described, exposure, emails, listed, chartHtml] = await Promise.all([
      shown,
      events.secretExposures(appId, context),
      emailsOf(appId, context),
      view === undefined
        ? undefined
        : events.list(appId, { ...listFilter(view), ...(beforeId === undefined ? {} : { beforeId }), limit: PAGE_SIZE }, context),
      view === undefined ? undefined : shown.then((app) => chartOf(appId, view, Date.parse(app.createdAt), context)),
    ]);
    const form = viewForm(appId, view === undefined ? typedState(raw) : stateOf(view), now, mistake);
    const top = html`${appHeader(appId, described.name, 'Events')}
${secretExposureWarnings(appId, exposure, permissionsOf(role))}
${form}`;
    if (view === undefined || listed === undefined || chartHtml === undefined) {
      return sendPage(reply, page({ title: `Events · ${described.name}`, developer, csrfToken: reply.generateCsrf(), body: top }), 400);
    }
    const live = view.range !== 'custom' && beforeId === undefined;
    const newest = listed.events[0]?.id ?? (live ? await newestId(appId, context) : 0);
    const links = eventLinks(appId, view);
    const body = html`${top}
<h2>Tokens</h2>
<p class="hint">Tokens issued and requests refused, counted for every request of the range${isFiltered(view) ? ' (the type, reason and address filters apply to the list of events below, not to the chart)' : ''}. Refused includes admin attempts throttled (429) after too many wrong secrets: counted, not listed. Many refusals in a short time are someone guessing; a sudden rise in admin tokens can be a leaked secret in use.</p>
<div class="charts" data-charts>${chartHtml}</div>
<h2 id="log">Events</h2>
${viewSummary(appId, view, beforeId !== undefined)}
<p class="hint">Anonymous tokens issued, tokens that revoke themselves, and admin attempts throttled after too many wrong secrets are counted in the chart, not listed one by one. Events are kept for a limited time.</p>
${live ? html`<p class="live-status" role="status" aria-live="polite" data-live-status></p>` : null}
${listed.events.length === 0 ? html`<p class="empty" data-no-events>${emptyText(appId, view, beforeId !== undefined, listed.nextCursor !== null)}</p>` : null}
<ol class="events" ${live ? html`data-live="/portal/apps/${appId}/events/live${viewQuery(view)}" data-newest="${newest}"` : null}>
${listed.events.map((event) => eventItem(event, emails, links))}
</ol>
${pager(appId, view, beforeId, listed.nextCursor)}`;
    return sendPage(reply, page({ title: `Events · ${described.name}`, developer, csrfToken: reply.generateCsrf(), body }));
  });

  // Polled by the page every few seconds while it is seen: not a person's activity.
  app.get<EventsRequest>(
    '/apps/:appId/events/live',
    { config: { background: true } satisfies BackgroundRouteConfig },
    async (request, reply) => {
      const { developer } = sessionOf(request);
      const { appId } = request.params;
      await members.authorize(appId, developer.id, 'view_events');
      const [view, mistake] = viewOrMistake(rawViewOf(request.query), clock.now());
      if (view === undefined) throw new TesseraError('invalid_request', mistake.message);
      if (view.range === 'custom') throw new TesseraError('invalid_request', 'A custom range is not updated live.');
      const after = eventIdOf(single(request.query.after, 'after'));
      const context = asDeveloper(request);
      const shown = apps.show(appId, context);
      const [added, emails, chartHtml] = await Promise.all([
        events.listAfter(appId, { afterId: after, ...listFilter(view), limit: LIVE_BATCH }, context),
        emailsOf(appId, context),
        shown.then((described) => chartOf(appId, view, Date.parse(described.createdAt), context)),
      ]);
      const newestFirst = added.events.reverse();
      const links = eventLinks(appId, view);
      return reply.type('application/json; charset=utf-8').send({
        count: newestFirst.length,
        newest: added.readTo,
        items: html`${newestFirst.map((event) => eventItem(event, emails, links))}`.text,
        charts: chartHtml.text,
      });
    },
  );

  app.get<EventRequest>('/apps/:appId/events/:eventId', async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId, eventId } = request.params;
    await members.authorize(appId, developer.id, 'view_events');
    const back = `/portal/apps/${appId}/events${backQuery(request.query, clock.now())}`;
    const id = /^[1-9][0-9]{0,15}$/.test(eventId) ? Number(eventId) : Number.NaN;
    if (!Number.isSafeInteger(id)) throw eventNotFound();
    const context = asDeveloper(request);
    const [described, event, emails] = await Promise.all([
      apps.show(appId, context),
      events.find(appId, id, context),
      emailsOf(appId, context),
    ]);
    if (event === undefined) throw eventNotFound();
    const body = eventPage(appId, described.name, event, emails, back);
    return sendPage(
      reply,
      page({ title: `${eventTitle(event)} · Events · ${described.name}`, developer, csrfToken: reply.generateCsrf(), body }),
    );
  });

  /** The id of the app's newest event, 0 when there is none: where live updates start when the page lists none. */
  async function newestId(appId: string, context: RequestContext): Promise<number> {
    return (await events.list(appId, { limit: 1 }, context)).events[0]?.id ?? 0;
  }
};

function eventNotFound(): TesseraError {
  return new TesseraError(
    notFound().code,
    'This app has no event with this id: it may have been removed, as events are kept for a limited time.',
  );
}

function single(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new TesseraError('invalid_request', `${name} must be given once.`);
  return value;
}

function rawViewOf(query: EventsRequest['Querystring']): RawView {
  return {
    range: single(query.range, 'range'),
    from: single(query.from, 'from'),
    to: single(query.to, 'to'),
    type: single(query.type, 'type'),
    reason: single(query.reason, 'reason'),
    clientAddress: single(query.clientAddress, 'clientAddress'),
  };
}

/** The view an event's page was opened from, for its way back; the default view for anything else. */
function backQuery(query: EventRequest['Querystring'], now: number): string {
  try {
    return viewQuery(parseEventView(rawViewOf(query), now));
  } catch {
    return '';
  }
}

/** The view the query asks for, or the mistake in what was typed into the form. */
function viewOrMistake(raw: RawView, now: number): [EventView, undefined] | [undefined, ViewMistake] {
  try {
    return [parseEventView(raw, now), undefined];
  } catch (error) {
    if (error instanceof ViewMistake) return [undefined, error];
    throw error;
  }
}

/** `after` of a live update: the newest event id the page shows, 0 for none. */
function eventIdOf(raw: string | undefined): number {
  if (raw === undefined || raw === '' || raw === '0') return 0;
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new TesseraError('invalid_request', 'after must be the id of an event this page showed.');
  }
  return Number(raw);
}

function capitalised(text: string): string {
  return `${text[0]!.toUpperCase()}${text.slice(1)}`;
}

/** What the form shows: the view's values, or what was typed when it had a mistake. */
interface FormState {
  range: string;
  from: string;
  to: string;
  type: string;
  reason: string;
  clientAddress: string;
}

function stateOf(view: EventView): FormState {
  return {
    range: view.range,
    from: view.from,
    to: view.to,
    type: view.type ?? '',
    reason: view.reason ?? '',
    clientAddress: view.clientAddress ?? '',
  };
}

/** What was typed, as it is shown again beside a mistake: cut short, never a page's worth of it. */
function typedState(raw: RawView): FormState {
  const typed = (value: string | undefined, max: number) => (value ?? '').trim().slice(0, max);
  return {
    range: typed(raw.range, 10),
    from: typed(raw.from, 40),
    to: typed(raw.to, 40),
    type: typed(raw.type, 40),
    reason: typed(raw.reason, 40),
    clientAddress: typed(raw.clientAddress, MAX_CLIENT_ADDRESS_LENGTH + 10),
  };
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
interface EventLinks {
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
function eventPage(appId: string, appName: string, event: AuditEvent, emails: Map<string, string>, back: string): Html {
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
  return html`${appHeader(appId, appName, 'Events')}
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
