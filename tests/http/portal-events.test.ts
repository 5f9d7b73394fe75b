import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeClock } from '../helpers/clock.js';
import { adminFields, anonymousFields, appOn, requestToken, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, createSharedApp } from '../helpers/portal.js';
import { signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { serverForSuite, startServer, type TestServer } from '../helpers/server.js';
import { OPERATOR } from '../../src/request-context.js';

// The events page of the portal over plain HTTP (on each store): who may see it, what it lists,
// its live updates, and its answers to bad query values.

let app: AppEndpoint;
let owner: PortalClient;
let collaborator: PortalClient;
let other: PortalClient;

const server = serverForSuite({}, async () => {
  const ownerAccount = await createDeveloper(server, 'owner@example.com');
  await createDeveloper(server, 'helper@example.com');
  await createDeveloper(server, 'other@example.com');
  app = await createSharedApp(server, 'Shop', ownerAccount.email, 'helper@example.com');
  [owner, collaborator, other] = await Promise.all([
    signInOverHttp(server, 'owner@example.com'),
    signInOverHttp(server, 'helper@example.com'),
    signInOverHttp(server, 'other@example.com'),
  ]);
});

const eventsPath = (query = '') => `/portal/apps/${app.appId}/events${query}`;
const livePath = (query = '') => `/portal/apps/${app.appId}/events/live${query}`;

/** Each event a page lists, as its HTML, in its order. */
function eventItems(text: string): string[] {
  return text
    .split('<li class="event ')
    .slice(1)
    .map((item) => item.slice(0, item.indexOf('\n</li>')));
}

/** `2026-11-23 17:02:11 UTC`, as the portal says an instant to the second. */
function utcSecond(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** The ids of the events a page lists, in its order. */
function listedIds(text: string): number[] {
  return [...text.matchAll(/data-event-id="(\d+)"/g)].map((match) => Number(match[1]));
}

describe('the events page', () => {
  it('names the owner an event gives by its email, and says that a rotation kept the admin tokens', async () => {
    const other = await server.tessera.ownedApps.create('Rotated', 'owner@example.com', OPERATOR);
    await server.tessera.apps.rotateSecret(other.appId, { graceSeconds: 60 }, OPERATOR);
    const page = await owner.get(`/portal/apps/${other.appId}/events`);
    assert.match(page.text, /owner: owner@example\.com/);
    assert.doesNotMatch(page.text, /owner id:/);
    assert.match(page.text, /admin tokens kept/);
    assert.doesNotMatch(page.text, /0 admin tokens revoked/);
  });

  it('lists the app’s events newest first, for its owner and its collaborators, with the charts', async () => {
    assert.equal((await requestToken(app, adminFields(app))).status, 200);
    assert.equal((await requestToken(app, adminFields(app, { client_secret: 'wrong' }))).status, 401);
    assert.equal((await requestToken(app, anonymousFields(app))).status, 200);
    for (const client of [owner, collaborator]) {
      const page = await client.get(eventsPath());
      assert.equal(page.status, 200, page.text);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(page.text, /aria-current="page">Events</);
      const ids = listedIds(page.text);
      assert.ok(ids.length >= 2);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => b - a),
        'newest first',
      );
      assert.ok(page.text.indexOf('Admin token request refused') < page.text.indexOf('Admin token issued'));
      assert.match(page.text, /wrong ClientID or ClientSecret/);
      assert.match(
        page.text,
        /<figure class="chart" id="chart-hourly" data-per="hour" data-issued="2" data-refused="1" data-throttled="0">/,
      );
      assert.match(page.text, /<figure class="chart" id="chart-daily" data-per="day" data-issued="2" data-refused="1" data-throttled="0">/);
      assert.doesNotMatch(page.text, new RegExp(app.clientSecret));
      assert.doesNotMatch(page.text, /data-warning="secret-exposed"/);
    }
  });

  it("lists a refused attempt as what it asked for and from where, never as the admin's or an anonymous user's doing", async () => {
    const guessed = appOn(server, await server.tessera.ownedApps.create('Guessed', 'owner@example.com', OPERATOR));
    await server.tessera.apps.configure(guessed.appId, { requireAppKey: true }, OPERATOR);
    assert.equal((await requestToken(guessed, adminFields(guessed, { client_secret: 'guess' }))).status, 401);
    assert.equal((await requestToken(guessed, anonymousFields(guessed, { client_secret: 'guess' }))).status, 401);
    const page = await owner.get(`/portal/apps/${guessed.appId}/events?type=token.refused`);
    assert.equal(page.status, 200, page.text);
    const [anonymousAttempt, adminAttempt] = eventItems(page.text);
    assert.equal(eventItems(page.text).length, 2);

    assert.match(adminAttempt!, /<strong class="event-title">Admin token request refused<\/strong>/);
    assert.match(adminAttempt!, /<span>By someone without valid credentials<\/span> <span>from 127\.0\.0\.1<\/span>/);
    assert.match(adminAttempt!, /<li>wrong ClientID or ClientSecret<\/li>/);
    assert.doesNotMatch(adminAttempt!, /the admin|AppKey/);

    assert.match(anonymousAttempt!, /<strong class="event-title">Anonymous token request refused<\/strong>/);
    assert.match(anonymousAttempt!, /<span>By someone without valid credentials<\/span> <span>from 127\.0\.0\.1<\/span>/);
    assert.match(anonymousAttempt!, /<li>wrong AppKey<\/li>/);
    assert.doesNotMatch(anonymousAttempt!, /an anonymous user|ClientSecret/);
  });

  it('says what a revoke-all did: every anonymous token issued up to the cut-off is refused, not "count: 0"', async () => {
    const revoked = appOn(server, await server.tessera.ownedApps.create('Revoked', 'owner@example.com', OPERATOR));
    assert.equal((await requestToken(revoked, adminFields(revoked))).status, 200);
    for (const kind of ['anonymous', 'admin', 'all']) {
      const { csrf } = await owner.page(`/portal/apps/${revoked.appId}/settings`);
      const answer = await owner.post(`/portal/apps/${revoked.appId}/revoke-tokens`, { _csrf: csrf, kind, confirm: 'yes' });
      assert.equal(answer.status, 303, answer.text);
    }
    const page = await owner.get(`/portal/apps/${revoked.appId}/events?type=token.revoked`);
    assert.equal(page.status, 200, page.text);
    const [all, admin, anonymous] = eventItems(page.text);
    const { events: recorded } = await server.tessera.events.list(revoked.appId, { type: 'token.revoked', limit: 3 });
    const cutoffOf = (index: number) => utcSecond(recorded[index]!.details.anonymousCutoff as number);

    assert.match(anonymous!, /<strong class="event-title">Anonymous tokens revoked<\/strong>/);
    assert.match(anonymous!, new RegExp(`<li>every anonymous token issued up to ${cutoffOf(2)} is refused</li>`));
    assert.doesNotMatch(anonymous!, /count|scope|kind:/);

    assert.match(admin!, /<strong class="event-title">Admin tokens revoked<\/strong>/);
    assert.match(admin!, /<li>every admin token is refused \(1 revoked\)<\/li>/);
    assert.doesNotMatch(admin!, /count|scope|kind:/);

    assert.match(all!, /<strong class="event-title">All tokens revoked<\/strong>/);
    assert.match(all!, new RegExp(`<li>every admin token, and every anonymous token issued up to ${cutoffOf(0)}, is refused</li>`));
    assert.doesNotMatch(all!, /count|scope|kind:/);
  });

  it('filters by type', async () => {
    const page = await owner.get(eventsPath('?type=token.refused'));
    assert.equal(page.status, 200);
    assert.deepEqual(
      [...page.text.matchAll(/<li class="event [^"]*" data-event-id="\d+" data-type="([^"]+)"/g)].map((match) => match[1]),
      ['token.refused'],
    );
    assert.match(page.text, /<option value="token.refused" selected>/);
    const none = await owner.get(eventsPath('?type=app.secret_rotated'));
    assert.equal(none.status, 200);
    assert.deepEqual(listedIds(none.text), []);
    assert.match(none.text, /No events of this type/);
  });

  it('pages with the log’s cursor: "Older events" until there are none', async () => {
    for (let index = 0; index < 30; index++) assert.equal((await requestToken(app, adminFields(app))).status, 200);
    const first = await owner.get(eventsPath('?type=token.issued'));
    const firstIds = listedIds(first.text);
    assert.equal(firstIds.length, 25);
    const older = /<a href="([^"]+)" rel="next">Older events<\/a>/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
    assert.ok(older, 'an "Older events" link');
    assert.match(older, /type=token\.issued&cursor=\d+$/);
    const second = await owner.get(older);
    assert.equal(second.status, 200);
    const secondIds = listedIds(second.text);
    assert.equal(secondIds.length, 6);
    assert.ok(Math.max(...secondIds) < Math.min(...firstIds));
    assert.doesNotMatch(second.text, /Older events/);
    assert.match(second.text, /Newest events/);
    assert.doesNotMatch(second.text, /data-live=/, 'an older page is not updated live');
  });

  it('gives the events newer than the page shows, for the live update, with the charts', async () => {
    const page = await owner.get(eventsPath());
    const newest = /data-newest="(\d+)"/.exec(page.text)?.[1];
    assert.ok(newest);
    assert.equal(Number(newest), listedIds(page.text)[0]);
    const none = await owner.get(livePath(`?after=${newest}`));
    assert.equal(none.status, 200, none.text);
    assert.match(none.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual({ ...JSON.parse(none.text), charts: undefined }, { count: 0, newest: Number(newest), items: '', charts: undefined });

    assert.equal((await requestToken(app, adminFields(app, { client_secret: 'wrong' }))).status, 401);
    assert.equal((await requestToken(app, adminFields(app))).status, 200);
    const update = JSON.parse((await owner.get(livePath(`?after=${newest}`))).text);
    assert.equal(update.count, 2);
    assert.equal(update.newest, listedIds(update.items)[0]);
    assert.deepEqual(listedIds(update.items), [Number(newest) + 2, Number(newest) + 1]);
    assert.match(update.charts, /id="chart-hourly" data-per="hour" data-issued="\d+" data-refused="2"/);

    const refusedOnly = JSON.parse((await owner.get(livePath(`?after=${newest}&type=token.refused`))).text);
    assert.equal(refusedOnly.count, 1);
  });

  it('shows a warning while the ClientSecret has been sent from a browser and not rotated since', async () => {
    const exposed = await requestToken(app, adminFields(app), { origin: 'https://shop.example' });
    assert.equal(exposed.status, 400, exposed.text);
    const page = await owner.get(eventsPath());
    assert.match(page.text, /data-warning="secret-exposed"/);
    assert.match(page.text, /<code>https:\/\/shop\.example<\/code>/);
    assert.match(page.text, new RegExp(`<a href="/portal/apps/${app.appId}/rotate-secret">Rotate the ClientSecret</a>`));
    // The overview shows the same warning: its link leads to the rotate form, not back to the overview.
    const overview = await owner.get(`/portal/apps/${app.appId}`);
    assert.match(overview.text, /data-warning="secret-exposed"/);
    assert.match(overview.text, new RegExp(`<a href="/portal/apps/${app.appId}/rotate-secret">Rotate the ClientSecret</a>`));
    assert.doesNotMatch(overview.text, new RegExp(`<a href="/portal/apps/${app.appId}">the app's overview</a>`));
    assert.equal((await owner.get(`/portal/apps/${app.appId}/rotate-secret`)).status, 200, 'the owner may open the form the link leads to');
    assert.ok(page.text.indexOf('data-warning') < page.text.indexOf('<h2>Tokens</h2>'), 'at the top');
    assert.match(page.text, /ClientSecret sent from a browser/);
    assert.match((await collaborator.get(eventsPath())).text, /Ask the app's owner to rotate the ClientSecret/);

    await server.tessera.apps.rotateSecret(app.appId, {}, OPERATOR);
    assert.doesNotMatch((await owner.get(eventsPath())).text, /data-warning="secret-exposed"/);
  });
});

describe('what the events page refuses', () => {
  it('is 404 for another developer, the page and the live updates alike, as for an app that does not exist', async () => {
    for (const path of [
      eventsPath(),
      livePath(),
      livePath('?after=1'),
      '/portal/apps/0000000000000000/events',
      '/portal/apps/0000000000000000/events/live',
    ]) {
      const answer = await other.get(path);
      assert.equal(answer.status, 404, path);
      assert.match(answer.text, /<h1>Not found<\/h1>/);
      assert.doesNotMatch(answer.text, /data-event-id/);
    }
  });

  it('sends a visitor who is not signed in to the sign-in page', async () => {
    for (const path of [eventsPath(), livePath()]) {
      const answer = await fetch(`${server.baseUrl}${path}`, { redirect: 'manual' });
      assert.equal(answer.status, 303);
      assert.match(answer.headers.get('location') ?? '', /^\/portal\/sign-in\?next=/);
    }
  });

  it('answers bad query values with a 400 page that says what is wrong, never a 500', async () => {
    const huge = 'x'.repeat(6_000);
    const cases: [string, RegExp][] = [
      [eventsPath('?type=token.nonsense'), /Unknown event type &quot;token.nonsense&quot;/],
      [eventsPath(`?type=${huge}`), /Unknown event type/],
      [eventsPath('?type=token.issued&type=token.refused'), /type must be given once/],
      [eventsPath('?cursor=garbage'), /cursor is not one this service gave out/],
      [eventsPath('?cursor=-1'), /cursor is not one/],
      [eventsPath('?cursor=99999999999999999999'), /cursor is not one/],
      [eventsPath(`?cursor=${'9'.repeat(6_000)}`), /cursor is not one/],
      [eventsPath('?cursor=1&cursor=2'), /cursor must be given once/],
      [livePath('?after=garbage'), /after must be the id of an event/],
      [livePath('?after=99999999999999999999'), /after must be the id/],
      [livePath('?after=-5'), /after must be the id/],
      [livePath('?type=nope'), /Unknown event type/],
    ];
    for (const [path, message] of cases) {
      const answer = await owner.get(path);
      assert.equal(answer.status, 400, `${path.slice(0, 80)}: ${answer.text.slice(0, 200)}`);
      assert.match(answer.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(answer.text, message, path.slice(0, 80));
      assert.ok(answer.text.length < 10_000, 'a huge value is not echoed whole');
    }
    assert.equal((await owner.get(eventsPath())).status, 200, 'and the page still works');
  });
});

describe('the events page of an app whose ClientSecret is guessed past the failed-admin limits', () => {
  const LIMIT = 3;
  let guessed: AppEndpoint;
  let guessedOwner: PortalClient;

  const limited = serverForSuite({
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 1000,
      adminFailuresPerAddressPerMinute: LIMIT,
      adminFailuresPerAppPerMinute: 100,
    },
  });
  before(async () => {
    const account = await createDeveloper(limited, 'guessed@example.com');
    guessed = appOn(limited, await limited.tessera.ownedApps.create('Guessed', account.email, OPERATOR));
    guessedOwner = await signInOverHttp(limited, 'guessed@example.com');
  });

  it('counts the throttled attempts in the chart as refused, says how many were throttled, and lists only the 401s', async () => {
    const N = 12;
    const statuses: number[] = [];
    for (let i = 0; i < N; i++) statuses.push((await requestToken(guessed, adminFields(guessed, { client_secret: `wrong-${i}` }))).status);
    assert.deepEqual(statuses, [...Array(LIMIT).fill(401), ...Array(N - LIMIT).fill(429)]);
    await limited.tessera.events.flush();
    const page = await guessedOwner.get(`/portal/apps/${guessed.appId}/events`);
    assert.equal(page.status, 200, page.text);
    assert.match(
      page.text,
      new RegExp(
        `<figure class="chart" id="chart-hourly" data-per="hour" data-issued="0" data-refused="${N}" data-throttled="${N - LIMIT}">`,
      ),
    );
    assert.match(page.text, new RegExp(`<strong class="refused-total">${N} refused</strong> \\(${N - LIMIT} throttled\\)`));
    assert.match(page.text, /Refused includes admin attempts throttled \(429\) after too many wrong secrets/);
    assert.equal([...page.text.matchAll(/data-type="token.refused"/g)].length, LIMIT);
    assert.doesNotMatch(page.text, /data-type="token.throttled"/);
    const filtered = await guessedOwner.get(`/portal/apps/${guessed.appId}/events?type=token.throttled`);
    assert.equal(filtered.status, 200);
    assert.match(filtered.text, /counted in the charts, not listed/);
  });
});

describe('the live updates and the session', () => {
  let timed: TestServer;
  let clock: FakeClock;
  before(async () => {
    clock = new FakeClock(Date.now());
    timed = await startServer({ clock });
  });
  after(async () => {
    await timed?.close();
  });

  it('do not keep an idle session alive: a browser left on the events page meets the 30-minute idle timeout', async () => {
    const account = await createDeveloper(timed, 'watcher@example.com');
    const watched = await timed.tessera.ownedApps.create('Watched', account.email, OPERATOR);
    const browser = await signInOverHttp(timed, account.email);
    const live = `/portal/apps/${watched.appId}/events/live?after=0`;
    // A poll every 5 s for 29 minutes, in steps of a minute (the session is written at most once a minute).
    for (let minute = 1; minute < 30; minute++) {
      clock.advance(60_000);
      const poll = await browser.get(live);
      assert.equal(poll.status, 200, `minute ${minute}`);
    }
    clock.advance(60_000 + 1);
    const ended = await browser.get(live);
    assert.equal(ended.status, 303, 'the session ended 30 minutes after the last page a person asked for');
    assert.match(ended.location ?? '', /^\/portal\/sign-in/);
  });

  it('a page a person asks for keeps it alive', async () => {
    const account = await createDeveloper(timed, 'reader@example.com');
    const browser = await signInOverHttp(timed, account.email);
    for (let minute = 1; minute <= 40; minute++) {
      clock.advance(60_000);
      if (minute % 20 === 0) assert.equal((await browser.get('/portal/')).status, 200, `minute ${minute}`);
    }
    clock.advance(30 * 60_000 + 1);
    assert.equal((await browser.get('/portal/')).status, 303, '30 minutes after the last page');
  });
});
