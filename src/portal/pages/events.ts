import type { FastifyPluginAsync } from 'fastify';
import { TesseraError } from '../../errors.js';
import { actorOfEvent, EVENT_TYPES, type AuditEvent, type EventType } from '../../events/event.js';
import { parseEventPageQuery, type EventPageQuery } from '../../events/query.js';
import type { PrincipalKind } from '../../principal.js';
import type { Actor, RequestContext } from '../../request-context.js';
import { chartQueries, tokenChart, tokenSeries } from '../chart.js';
import { html, type Html } from '../html.js';
import { page } from '../layout.js';
import type { BackgroundRouteConfig, PortalContext } from '../context.js';
import { asDeveloper, requireSession, sendPage, sessionOf } from '../respond.js';
import { utcText, utcTime } from '../time.js';
import { appHeader } from './app-nav.js';
import { secretExposureWarning } from './secret-exposure-warning.js';

type EventsRequest = {
  Params: { appId: string };
  Querystring: Record<string, string | string[] | undefined>;
};

/** Events on a page of the log. */
const PAGE_SIZE = 25;
/** New events one live update brings at most; the next one brings the rest. */
const LIVE_BATCH = 100;

/**
 * An app's events page: what happened to the app, newest first, filtered by type and paged with the
 * log's cursor; a chart of tokens issued and refused; and a warning while the ClientSecret is known
 * to have leaked into a web page. `…/events/live` gives what is newer than the page shows, for the
 * script to add without a reload; the page works without it.
 */
export const eventsPages: FastifyPluginAsync<PortalContext> = async (app, { members, apps, events, clock }) => {
  app.addHook('preHandler', requireSession);

  /** Member emails by developer id, so that events name the developers who are still members. */
  const emailsOf = async (appId: string, context: RequestContext) =>
    new Map((await members.membersOf(appId, context)).map((member) => [member.developerId, member.email]));

  const charts = async (appId: string, context: RequestContext): Promise<Html> => {
    const queries = chartQueries(clock);
    const [hourly, daily] = await Promise.all([events.counts(appId, queries.hour, context), events.counts(appId, queries.day, context)]);
    return html`${tokenChart(tokenSeries(hourly), 'chart-hourly', 'Last 24 hours')}${tokenChart(tokenSeries(daily), 'chart-daily', 'Last 30 days')}`;
  };

  app.get<EventsRequest>('/apps/:appId/events', async (request, reply) => {
    const { developer } = sessionOf(request);
    const { appId } = request.params;
    const role = await members.authorize(appId, developer.id, 'view_events');
    const query = parseEventPageQuery(
      { type: single(request.query.type, 'type'), cursor: single(request.query.cursor, 'cursor') },
      PAGE_SIZE,
    );
    const context = asDeveloper(request);
    const [described, listed, exposure, emails, chartsHtml] = await Promise.all([
      apps.show(appId, context),
      events.list(appId, query, context),
      events.lastSecretExposure(appId, context),
      emailsOf(appId, context),
      charts(appId, context),
    ]);
    const live = query.beforeId === undefined;
    const newest = listed.events[0]?.id ?? (live ? await newestId(appId, query.type, context) : 0);
    const body = html`${appHeader(appId, described.name, 'Events')}
${secretExposureWarning(appId, exposure, role)}
<h2>Tokens</h2>
<p class="hint">Tokens issued and requests refused, counted for every request. Refused includes admin attempts throttled (429) after too many wrong secrets: counted, not listed. Many refusals in a short time are someone guessing; a sudden rise in admin tokens can be a leaked secret in use.</p>
<div class="charts" data-charts>${chartsHtml}</div>
<h2 id="log">Events</h2>
${filterForm(appId, query.type)}
<p class="live-status" role="status" aria-live="polite" data-live-status></p>
${listed.events.length === 0 ? html`<p class="empty" data-no-events>${emptyText(query)}</p>` : null}
<ol class="events" ${live ? html`data-live="/portal/apps/${appId}/events/live${query.type === undefined ? '' : `?type=${query.type}`}" data-newest="${newest}"` : null}>
${listed.events.map((event) => eventItem(event, emails))}
</ol>
${pager(appId, query, listed.nextCursor)}
<p class="hint">Anonymous tokens issued, tokens that revoke themselves, and admin attempts throttled after too many wrong secrets are counted in the charts but not listed one by one. Events are kept for a limited time.</p>`;
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
      const { type } = parseEventPageQuery({ type: single(request.query.type, 'type') });
      const after = eventIdOf(single(request.query.after, 'after'));
      const context = asDeveloper(request);
      const [added, emails, chartsHtml] = await Promise.all([
        events.listAfter(appId, { afterId: after, type, limit: LIVE_BATCH }, context),
        emailsOf(appId, context),
        charts(appId, context),
      ]);
      const newestFirst = added.reverse();
      return reply.type('application/json; charset=utf-8').send({
        count: newestFirst.length,
        newest: newestFirst[0]?.id ?? after,
        items: html`${newestFirst.map((event) => eventItem(event, emails))}`.text,
        charts: chartsHtml.text,
      });
    },
  );

  /** The id of the newest event of the app (of `type`), 0 when there is none: where live updates start. */
  async function newestId(appId: string, type: EventType | undefined, context: RequestContext): Promise<number> {
    return (await events.list(appId, { type, limit: 1 }, context)).events[0]?.id ?? 0;
  }
};

function single(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new TesseraError('invalid_request', `${name} must be given once.`);
  return value;
}

/** `after` of a live update: the newest event id the page shows, 0 for none. */
function eventIdOf(raw: string | undefined): number {
  if (raw === undefined || raw === '' || raw === '0') return 0;
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new TesseraError('invalid_request', 'after must be the id of an event this page showed.');
  }
  return Number(raw);
}

function filterForm(appId: string, type: EventType | undefined): Html {
  return html`<form method="get" action="/portal/apps/${appId}/events" class="filter">
  <label for="event-type">Type</label>
  <select id="event-type" name="type">
    <option value=""${type === undefined ? html` selected` : null}>All types</option>
    ${EVENT_TYPES.map((option) => html`<option value="${option}"${option === type ? html` selected` : null}>${TYPE_WORDS[option]}</option>`)}
  </select>
  <button type="submit">Show</button>
</form>`;
}

function emptyText(query: EventPageQuery): string {
  if (query.beforeId !== undefined) return 'No older events.';
  if (query.type === 'token.throttled')
    return 'Admin attempts throttled after too many wrong secrets are counted in the charts, not listed.';
  return query.type === undefined
    ? 'No events yet. They appear here as tokens are asked for.'
    : `No events of this type (${TYPE_WORDS[query.type]}) yet.`;
}

function pager(appId: string, query: EventPageQuery, nextCursor: string | null): Html | null {
  if (nextCursor === null && query.beforeId === undefined) return null;
  const base = `/portal/apps/${appId}/events`;
  const typed = query.type === undefined ? '' : `type=${query.type}`;
  const older = `${base}?${typed}${typed === '' ? '' : '&'}cursor=${nextCursor}`;
  return html`<nav class="pager" aria-label="Pages of events">
  ${query.beforeId === undefined ? null : html`<a href="${base}${typed === '' ? '' : `?${typed}`}">Newest events</a>`}
  ${nextCursor === null ? null : html`<a href="${older}" rel="next">Older events</a>`}
</nav>`;
}

/** Each type, as a list of events names it. */
const TYPE_WORDS: Record<EventType, string> = {
  'token.issued': 'Token issued',
  'token.revoked': 'Token revoked',
  'token.refused': 'Request refused',
  'token.throttled': 'Admin attempt throttled',
  'app.secret_rotated': 'ClientSecret rotated',
  'app.configuration_changed': 'Settings changed',
  'app.secret_exposed': 'ClientSecret sent from a browser',
  'app.owner_changed': 'Owner changed',
  'app.collaborator_invited': 'Collaborator invited',
  'app.collaborator_added': 'Collaborator added',
  'app.collaborator_removed': 'Collaborator removed',
  'app.invitation_withdrawn': 'Invitation withdrawn',
  'credential.created': 'Credential created',
  'credential.rotated': 'Credential\u2019s secret rotated',
  'credential.revoked': 'Credential revoked',
  'credential.refused': 'Credential refused',
};

/** What happened, in words: the type, said more exactly where the principal, or what was attempted, tells more. */
function eventTitle(event: AuditEvent): string {
  if (event.type === 'token.issued') return event.principal === 'anonymous' ? 'Anonymous token issued' : 'Admin token issued';
  if (event.type === 'token.refused') {
    if (event.details.reason === 'invalid_token') return 'Token refused';
    const { attempted } = actorOfEvent(event.type, event.principal);
    if (attempted === 'admin') return 'Admin token request refused';
    if (attempted === 'anonymous') return 'Anonymous token request refused';
  }
  if (event.type === 'token.revoked' && event.details.scope === 'app') {
    if (event.details.kind === 'admin') return 'Admin tokens revoked';
    if (event.details.kind === 'anonymous') return 'Anonymous tokens revoked';
    if (event.details.kind === 'all') return 'All tokens revoked';
  }
  return TYPE_WORDS[event.type];
}

const ACTORS: Record<Actor, string> = {
  admin: 'the admin (ClientSecret or admin token)',
  anonymous: 'an anonymous user',
  operator: 'the operator (command line)',
  developer: 'a developer in the portal',
};

/** Who did it; for a refused request, nobody known (the title says what it asked for, the address where from). */
function whoOf(event: AuditEvent, emails: Map<string, string>): string {
  const { principal } = actorOfEvent(event.type, event.principal);
  if (principal === null) return 'someone without valid credentials';
  if (principal === 'developer' && typeof event.details.byDeveloperId === 'string') {
    return emails.get(event.details.byDeveloperId) ?? `Developer ${event.details.byDeveloperId}`;
  }
  return ACTORS[principal] ?? principal;
}

const CLASSES: Partial<Record<EventType, string>> = { 'token.refused': 'refused', 'app.secret_exposed': 'exposed' };

/** One event as a list item: what, when, who, from where, and its details in words. */
export function eventItem(event: AuditEvent, emails: Map<string, string>): Html {
  const details = detailsOf(event, emails);
  return html`<li class="event ${CLASSES[event.type] ?? ''}" data-event-id="${event.id}" data-type="${event.type}">
  <p class="event-head"><strong class="event-title">${eventTitle(event)}</strong> ${utcTime(event.at, 'second')}</p>
  <p class="event-who"><span>By ${whoOf(event, emails)}</span> <span>from ${event.clientAddress ?? 'the command line'}</span></p>
  ${details.length === 0 ? null : html`<ul class="event-details">${details.map((detail) => html`<li>${detail}</li>`)}</ul>`}
</li>`;
}

/** How many items of a list, and characters of a value, an event shows: a long list of origins is summarised. */
const MAX_LISTED = 5;
const MAX_SHOWN_LENGTH = 120;

function detailsOf(event: AuditEvent, emails: Map<string, string>): string[] {
  const revokedAll = event.type === 'token.revoked' && event.details.scope === 'app' ? appRevocationText(event) : null;
  const shown: string[] = revokedAll === null ? [] : [revokedAll];
  for (const [key, value] of Object.entries(event.details)) {
    if (key === 'byDeveloperId' || (key === 'reason' && event.type === 'token.refused' && value === 'invalid_token')) continue;
    if (revokedAll !== null && APP_REVOCATION_KEYS.has(key)) continue;
    if (key === 'reason' && event.type === 'token.refused' && value === 'invalid_client') {
      shown.push(wrongCredentials(actorOfEvent(event.type, event.principal).attempted));
      continue;
    }
    shown.push(detailOf(key, value, emails));
  }
  return shown;
}

/** What a refused token request got wrong: of what it asked for, never the other kind's key. */
function wrongCredentials(attempted: PrincipalKind | null): string {
  if (attempted === 'admin') return 'wrong ClientID or ClientSecret';
  if (attempted === 'anonymous') return 'wrong AppKey';
  return 'wrong ClientID, ClientSecret or AppKey';
}

/** The details a revoke-all's event says in one sentence (`appRevocationText`). */
const APP_REVOCATION_KEYS: ReadonlySet<string> = new Set(['kind', 'scope', 'count', 'anonymousCutoff']);

/**
 * A revoke-all of the app's tokens (`scope: app`), as what it did: its `count` is of stored tokens,
 * 0 for anonymous tokens, which are not stored but all ended by the cut-off. The cut-off is in
 * events recorded since it was added to them; before, it was the event's own time.
 */
function appRevocationText(event: AuditEvent): string | null {
  const { kind, count, anonymousCutoff } = event.details;
  const cutoff = typeof anonymousCutoff === 'number' ? `up to ${instantText(anonymousCutoff)}` : 'until then';
  if (kind === 'admin') return `every admin token is refused (${String(count)} revoked)`;
  if (kind === 'anonymous') return `every anonymous token issued ${cutoff} is refused`;
  if (kind === 'all') return `every admin token, and every anonymous token issued ${cutoff}, is refused`;
  return null;
}

function detailOf(key: string, value: AuditEvent['details'][string], emails: Map<string, string>): string {
  switch (key) {
    case 'expiresAt':
      return typeof value === 'number' ? `expires ${instantText(value)}` : 'never expires';
    case 'previousSecretValidUntil':
      return typeof value === 'number'
        ? `previous ClientSecret works until ${instantText(value)}`
        : 'previous ClientSecret stopped at once';
    case 'secret':
      return `with the ${shorten(String(value))} ClientSecret`;
    case 'reason':
      return `reason: ${shorten(String(value))}`;
    case 'origin':
      return value === null ? 'from a page of an unknown origin' : `from the page at ${shorten(String(value))}`;
    case 'scope':
      return value === 'app'
        ? "all of the app's tokens of that kind"
        : value === 'token'
          ? 'one token'
          : `scope: ${shorten(String(value))}`;
    case 'adminTokensRevoked':
      return value === 0 ? 'admin tokens kept' : `${String(value)} admin tokens revoked`;
  }
  const name = words(key);
  // `ownerId` → `owner: ada@example.com` (or `none`): the person, not the id.
  if (key.endsWith('Id') && typeof value === 'string' && emails.has(value)) return `${words(key.slice(0, -2))}: ${emails.get(value)}`;
  if (key.endsWith('Id') && value === null) return `${words(key.slice(0, -2))}: none`;
  if (Array.isArray(value)) {
    const listed = value.slice(0, MAX_LISTED).map(shorten).join(', ');
    return `${name}: ${value.length === 0 ? 'none' : listed}${value.length > MAX_LISTED ? ` and ${value.length - MAX_LISTED} more` : ''}`;
  }
  if (typeof value === 'boolean') return `${name}: ${value ? 'yes' : 'no'}`;
  if (typeof value === 'number' && /(At|Until)$/.test(key)) return `${name}: ${instantText(value)}`;
  return `${name}: ${value === null ? 'none' : shorten(String(value))}`;
}

/** An instant in UNIX ms as people read it; a number that is no date as it is. */
function instantText(ms: number): string {
  return Number.isFinite(new Date(ms).getTime()) ? utcText(ms, 'second') : String(ms);
}

/** `adminTokenMaxLifetimeSeconds` → `admin token max lifetime seconds`. */
function words(key: string): string {
  return shorten(key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase());
}

function shorten(text: string): string {
  return text.length > MAX_SHOWN_LENGTH ? `${text.slice(0, MAX_SHOWN_LENGTH)}…` : text;
}
