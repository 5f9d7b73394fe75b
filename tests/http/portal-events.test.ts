import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeClock } from '../helpers/clock.js';
import { ADDRESS_A, ADDRESS_B, atTime, from, recordTheMorning } from '../helpers/investigation.js';
import { adminFields, anonymousFields, appOn, bearer, requestToken, revokeToken, type AppEndpoint } from '../helpers/http.js';
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
      // The app is minutes old: its day is a chart of minutes since it was created.
      assert.match(
        page.text,
        /<figure class="chart" id="chart-tokens" data-per="minute" data-issued="2" data-refused="1" data-throttled="0">/,
      );
      assert.equal([...page.text.matchAll(/<figure class="chart"/g)].length, 1);
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

    assert.match(
      adminAttempt!,
      /<strong class="event-title"><a href="\/portal\/apps\/\w+\/events\/\d+\?type=token\.refused">Admin token request refused<\/a><\/strong>/,
    );
    assert.match(
      adminAttempt!,
      /<span>By someone without valid credentials<\/span> <span>from <a href="\/portal\/apps\/\w+\/events\?type=token\.refused&amp;clientAddress=127\.0\.0\.1">127\.0\.0\.1<\/a><\/span>/,
    );
    assert.match(adminAttempt!, /<li>wrong ClientID or ClientSecret<\/li>/);
    assert.doesNotMatch(adminAttempt!, /the admin|AppKey/);

    assert.match(anonymousAttempt!, /<strong class="event-title"><a href="[^"]+">Anonymous token request refused<\/a><\/strong>/);
    assert.match(
      anonymousAttempt!,
      /<span>By someone without valid credentials<\/span> <span>from <a href="[^"]+">127\.0\.0\.1<\/a><\/span>/,
    );
    assert.match(anonymousAttempt!, /<li>wrong AppKey<\/li>/);
    assert.doesNotMatch(anonymousAttempt!, /an anonymous user|ClientSecret/);
  });

  it('says what a revocation did: every admin token and how many, every anonymous token up to the cut-off, one token; never "count: 0"', async () => {
    const revoked = appOn(server, await server.tessera.ownedApps.create('Revoked', 'owner@example.com', OPERATOR));
    const revokedAdmin = (await requestToken(revoked, adminFields(revoked))).body.access_token as string;
    assert.equal(
      (await revokeToken(revoked.appUrl, (await requestToken(revoked, adminFields(revoked))).body.access_token, bearer(revokedAdmin)))
        .status,
      200,
    );
    assert.equal((await requestToken(revoked, adminFields(revoked))).status, 200);
    for (const kind of ['anonymous', 'admin', 'all']) {
      const { csrf } = await owner.page(`/portal/apps/${revoked.appId}/settings`);
      const answer = await owner.post(`/portal/apps/${revoked.appId}/revoke-tokens`, { _csrf: csrf, kind, confirm: 'yes' });
      assert.equal(answer.status, 303, answer.text);
    }
    const page = await owner.get(`/portal/apps/${revoked.appId}/events?type=token.revoked`);
    assert.equal(page.status, 200, page.text);
    const [all, admin, anonymous, one] = eventItems(page.text);
    const { events: recorded } = await server.tessera.events.list(revoked.appId, { type: 'token.revoked', limit: 4 });
    const cutoffOf = (index: number) => utcSecond(recorded[index]!.details.anonymousCutoff as number);

    assert.match(anonymous!, /">Anonymous tokens revoked<\/a><\/strong>/);
    assert.match(anonymous!, new RegExp(`<li>Revoked every anonymous token of the app issued up to ${cutoffOf(2)}</li>`));
    assert.doesNotMatch(anonymous!, /count|scope|kind:/);

    assert.match(admin!, /">Admin tokens revoked<\/a><\/strong>/);
    assert.match(admin!, /<li>Revoked every admin token of the app: 2<\/li>/);
    assert.doesNotMatch(admin!, /count|scope|kind:/);

    assert.match(all!, /">All tokens revoked<\/a><\/strong>/);
    assert.match(
      all!,
      new RegExp(`<li>Revoked every token of the app: 0 admin tokens, and every anonymous token issued up to ${cutoffOf(0)}</li>`),
    );
    assert.doesNotMatch(all!, /count|scope|kind:/);

    assert.match(one!, /">Admin token revoked<\/a><\/strong>/);
    assert.match(one!, /<span>By the admin \(ClientSecret or admin token\)<\/span>/);
    assert.match(one!, /<li>Revoked one admin token<\/li>/);
    assert.doesNotMatch(one!, /count|scope|kind:/);
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
    assert.match(
      none.text,
      /No events like these in the last 24 hours\. <a href="[^"]+\?range=30d&amp;type=app\.secret_rotated">The last 30 days<\/a>/,
    );
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
    assert.match(update.charts, /id="chart-tokens" data-per="minute" data-issued="\d+" data-refused="2"/);

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
  const NO_APP = '/portal/apps/0000000000000000';
  const notFound: { name: string; path: () => string }[] = [
    { name: 'the page', path: () => eventsPath() },
    { name: 'the live updates', path: () => livePath() },
    { name: 'the live updates after an event', path: () => livePath('?after=1') },
    { name: 'the page of an app that does not exist', path: () => `${NO_APP}/events` },
    { name: 'the live updates of an app that does not exist', path: () => `${NO_APP}/events/live` },
  ];
  for (const { name, path } of notFound) {
    it(`is 404 for another developer: ${name}`, async () => {
      const answer = await other.get(path());
      assert.equal(answer.status, 404, path());
      assert.match(answer.text, /<h1>Not found<\/h1>/);
      assert.doesNotMatch(answer.text, /data-event-id/);
    });
  }

  for (const { name, path } of notFound.slice(0, 2)) {
    it(`sends a visitor who is not signed in to the sign-in page: ${name}`, async () => {
      const answer = await fetch(`${server.baseUrl}${path()}`, { redirect: 'manual' });
      assert.equal(answer.status, 303);
      assert.match(answer.headers.get('location') ?? '', /^\/portal\/sign-in\?next=/);
    });
  }

  const huge = 'x'.repeat(6_000);
  const badQueries: { name: string; path: () => string; message: RegExp }[] = [
    { name: 'an unknown type', path: () => eventsPath('?type=token.nonsense'), message: /Unknown event type &quot;token.nonsense&quot;/ },
    { name: 'a type of 6000 characters', path: () => eventsPath(`?type=${huge}`), message: /Unknown event type/ },
    { name: 'two types', path: () => eventsPath('?type=token.issued&type=token.refused'), message: /type must be given once/ },
    { name: 'a garbage cursor', path: () => eventsPath('?cursor=garbage'), message: /cursor is not one this service gave out/ },
    { name: 'a negative cursor', path: () => eventsPath('?cursor=-1'), message: /cursor is not one/ },
    { name: 'a 20-digit cursor', path: () => eventsPath('?cursor=99999999999999999999'), message: /cursor is not one/ },
    { name: 'a 6000-digit cursor', path: () => eventsPath(`?cursor=${'9'.repeat(6_000)}`), message: /cursor is not one/ },
    { name: 'two cursors', path: () => eventsPath('?cursor=1&cursor=2'), message: /cursor must be given once/ },
    { name: 'live updates after garbage', path: () => livePath('?after=garbage'), message: /after must be the id of an event/ },
    { name: 'live updates after 20 digits', path: () => livePath('?after=99999999999999999999'), message: /after must be the id/ },
    { name: 'live updates after -5', path: () => livePath('?after=-5'), message: /after must be the id/ },
    { name: 'live updates of an unknown type', path: () => livePath('?type=nope'), message: /Unknown event type/ },
  ];
  for (const { name, path, message } of badQueries) {
    it(`answers ${name} with a 400 page that says what is wrong, never a 500`, async () => {
      const answer = await owner.get(path());
      assert.equal(answer.status, 400, `${path().slice(0, 80)}: ${answer.text.slice(0, 200)}`);
      assert.match(answer.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(answer.text, message, path().slice(0, 80));
      assert.ok(answer.text.length < 10_000, 'a huge value is not echoed whole');
    });
  }

  it('and after the bad query values, the page still works', async () => {
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
        `<figure class="chart" id="chart-tokens" data-per="minute" data-issued="0" data-refused="${N}" data-throttled="${N - LIMIT}">`,
      ),
    );
    assert.match(page.text, new RegExp(`<strong class="refused-total">${N} refused</strong> \\(${N - LIMIT} throttled\\)`));
    assert.match(page.text, /Refused includes admin attempts throttled \(429\) after too many wrong secrets/);
    assert.equal([...page.text.matchAll(/data-type="token.refused"/g)].length, LIMIT);
    assert.doesNotMatch(page.text, /data-type="token.throttled"/);
    const filtered = await guessedOwner.get(`/portal/apps/${guessed.appId}/events?type=token.throttled`);
    assert.equal(filtered.status, 200);
    assert.match(filtered.text, /counted in the chart, not listed/);
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

describe('the events page for an investigation: a time range, filters, and one event’s page', () => {
  // The server's clock stands still, moved by the test; clients' addresses come through a proxy.
  const clock = new FakeClock(Date.parse('2026-03-10T13:50:00Z'));
  const timed = serverForSuite({ clock, trustedProxies: ['127.0.0.1', '::1'] });
  const [A, B] = [ADDRESS_A, ADDRESS_B];
  const at = (time: string) => atTime(clock, time);
  let shop: AppEndpoint;
  let owner: PortalClient;
  let stranger: PortalClient;
  const shopEvents = (query = '') => `/portal/apps/${shop.appId}/events${query}`;
  const wrongSecret = (address: string) => requestToken(shop, adminFields(shop, { client_secret: 'a guess' }), from(address));
  /** The page, signed in a moment before (the session's idle timeout follows the server's clock). */
  const get = async (path: string) => {
    owner = await signInOverHttp(timed, 'investigator@example.com');
    return owner.get(path);
  };
  const listed = (text: string) =>
    [
      ...text.matchAll(
        /<li class="event [^"]*" data-event-id="\d+" data-type="([^"]+)">[\s\S]*?<time datetime="([^"]+)">[\s\S]*?<span>from (?:<a href="[^"]+">)?([^<]+)/g,
      ),
    ].map((match) => [match[2]!.slice(11, 19), match[1], match[3]]);

  before(async () => {
    at('13:50:00');
    await createDeveloper(timed, 'investigator@example.com');
    await createDeveloper(timed, 'stranger@example.com');
    shop = appOn(timed, await timed.tessera.ownedApps.create('Shop', 'investigator@example.com', OPERATOR));
    await recordTheMorning(clock, shop);
    at('14:10:00');
    stranger = await signInOverHttp(timed, 'stranger@example.com');
  });

  it('answers "what happened between 14:02 and 14:05 from this address": exactly those events, and the chart of those minutes', async () => {
    const page = await get(shopEvents(`?range=custom&from=2026-03-10T14:02&to=2026-03-10T14:05&clientAddress=${A}`));
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(listed(page.text), [
      ['14:04:59', 'token.refused', A],
      ['14:03:20', 'token.issued', A],
      ['14:02:00', 'token.refused', A],
    ]);
    assert.match(
      page.text,
      /<p class="view-summary" data-view-summary>Events from <strong>2026-03-10 14:02 to 14:05 UTC<\/strong> from <strong>203\.0\.113\.7<\/strong>, newest first\. A custom range is not updated live\./,
    );
    // The chart counts every request of those minutes, from every address.
    assert.match(
      page.text,
      /<figure class="chart" id="chart-tokens" data-per="minute" data-issued="1" data-refused="3" data-throttled="0">/,
    );
    assert.match(page.text, /<h3>2026-03-10 14:02 to 14:05 UTC<\/h3>/);
    assert.equal([...page.text.matchAll(/<rect class="bar /g)].length, 4, 'a bar per minute with a count: 14:02, 14:03 (both), 14:04');
    assert.match(page.text, /the type, reason and address filters apply to the list of events below, not to the chart/);
    // The form shows what it asked for, and nothing of the page is updated live.
    assert.match(page.text, /<input type="radio" id="range-custom" name="range" value="custom" checked>/);
    assert.match(page.text, /<input type="datetime-local" id="event-from" name="from" value="2026-03-10T14:02"/);
    assert.match(page.text, /<input type="datetime-local" id="event-to" name="to" value="2026-03-10T14:05"/);
    assert.match(page.text, /<input type="text" id="event-address" name="clientAddress" value="203\.0\.113\.7"/);
    assert.doesNotMatch(page.text, /data-live=/);

    const both = await get(shopEvents('?range=custom&from=2026-03-10T14:02&to=2026-03-10T14:05'));
    assert.deepEqual(listed(both.text), [
      ['14:04:59', 'token.refused', A],
      ['14:03:20', 'token.issued', A],
      ['14:03:10', 'token.refused', B],
      ['14:02:00', 'token.refused', A],
    ]);
    const refusals = await get(
      shopEvents(`?range=custom&from=2026-03-10T14:00&to=2026-03-10T14:10&clientAddress=${A}&type=token.refused&reason=invalid_client`),
    );
    assert.deepEqual(listed(refusals.text), [
      ['14:05:00', 'token.refused', A],
      ['14:02:00', 'token.refused', A],
      ['14:01:59', 'token.refused', A],
    ]);
    assert.match(refusals.text, /<option value="invalid_client" selected>Wrong ClientID, ClientSecret or AppKey<\/option>/);
    const ipv6 = await get(shopEvents(`?range=1h&clientAddress=${encodeURIComponent(B)}`));
    assert.deepEqual(listed(ipv6.text), [
      ['14:06:00', 'token.refused', B],
      ['14:03:10', 'token.refused', B],
    ]);
    // A link may give only from and to, in RFC 3339 with an offset.
    const linked = await get(shopEvents(`?from=2026-03-10T15:02:00%2B01:00&to=2026-03-10T15:05:00%2B01:00&clientAddress=${A}`));
    assert.deepEqual(listed(linked.text), listed(page.text));
  });

  it('lists the last 15 minutes, hour, day or 30 days, with a chart in minutes, hours or days, never from before the app was created', async () => {
    const charted = (text: string) =>
      /<figure class="chart" id="chart-tokens" data-per="(\w+)" data-issued="(\d+)" data-refused="(\d+)"/.exec(text)?.slice(1);
    const bars = (text: string) => [...text.matchAll(/<tr><th scope="row">/g)].length;

    const quarter = await get(shopEvents('?range=15m'));
    assert.deepEqual(charted(quarter.text), ['minute', '2', '6']);
    assert.equal(bars(quarter.text), 15, 'from 13:56 to 14:10');
    assert.equal(listed(quarter.text).length, 8);
    assert.match(quarter.text, /data-live="\/portal\/apps\/\w+\/events\/live\?range=15m"/);
    assert.match(quarter.text, /<h3>Last 15 minutes<\/h3>/);
    clock.advance(10 * 60_000); // 14:20: the last 15 minutes start at 14:06
    const later = await get(shopEvents('?range=15m'));
    assert.deepEqual(listed(later.text), [['14:06:00', 'token.refused', B]]);
    assert.deepEqual(charted(later.text), ['minute', '0', '1']);

    // The app was created at 13:50, half an hour ago: the day and the month are its half hour, in minutes.
    for (const range of ['1h', '1d', '30d', '']) {
      const page = await get(shopEvents(range === '' ? '' : `?range=${range}`));
      assert.equal(page.status, 200, page.text);
      assert.deepEqual(charted(page.text), ['minute', '2', '6'], range);
      assert.equal(
        bars(page.text),
        31,
        `${range}: 13:50 to 14:20: ${[...page.text.matchAll(/<tr><th scope="row">([^<]+)/g)].map((m) => m[1]).join(', ')}`,
      );
      assert.match(page.text, /<p class="chart-note">Since the app was created, 2026-03-10 13:50 UTC: per minute\.<\/p>/);
      assert.equal(listed(page.text).length, 9, 'the events, and the app’s first owner (the command line)');
    }
    assert.match(
      (await get(shopEvents())).text,
      /<input type="radio" id="range-1d" name="range" value="1d" checked>/,
      'the last 24 hours by default',
    );

    clock.time = Date.parse('2026-03-11T20:00:00Z'); // a day and 6 hours after it was created
    const day = await get(shopEvents('?range=1d'));
    assert.deepEqual(charted(day.text), ['hour', '0', '0']);
    assert.equal(bars(day.text), 24);
    assert.deepEqual(listed(day.text), []);
    assert.match(day.text, /No events in the last 24 hours\. <a href="\/portal\/apps\/\w+\/events\?range=30d">The last 30 days<\/a>/);
    const month = await get(shopEvents('?range=30d'));
    assert.deepEqual(charted(month.text), ['hour', '2', '6']);
    assert.equal(bars(month.text), 32, 'from 13:00 on the 10th to 20:00 on the 11th');
    clock.time = Date.parse('2026-03-14T09:00:00Z');
    const days = await get(shopEvents('?range=30d'));
    assert.deepEqual(charted(days.text), ['day', '2', '6']);
    assert.equal(bars(days.text), 5, 'the 10th to the 14th, not 30 days');
    clock.time = Date.parse('2026-04-20T09:00:00Z');
    const older = await get(shopEvents('?range=30d'));
    assert.deepEqual(charted(older.text), ['day', '0', '0']);
    assert.equal(bars(older.text), 30);
    assert.doesNotMatch(older.text, /chart-note/);

    // A custom range: minutes up to 2 hours, hours up to 2 days, days beyond; not before the app.
    const custom = async (fromTime: string, toTime: string) =>
      charted((await get(shopEvents(`?range=custom&from=${fromTime}&to=${toTime}`))).text);
    assert.deepEqual(await custom('2026-03-10T12:00', '2026-03-10T14:10'), ['minute', '2', '6']);
    assert.deepEqual(await custom('2026-03-10T13:00', '2026-03-10T15:50'), ['minute', '2', '6'], 'the 2 hours after 13:50');
    assert.deepEqual(await custom('2026-03-10T13:00', '2026-03-10T15:51'), ['hour', '2', '6']);
    assert.deepEqual(await custom('2026-03-10T14:00', '2026-03-11T14:00'), ['hour', '2', '6']);
    assert.deepEqual(await custom('2026-03-09T00:00', '2026-03-13T00:00'), ['day', '2', '6']);
    const before = await get(shopEvents('?range=custom&from=2026-03-01T00:00&to=2026-03-10T13:00'));
    assert.match(before.text, /<p class="empty" data-no-chart>The app was created 2026-03-10 13:50 UTC, after this range/);
    assert.deepEqual(listed(before.text), []);
    at('14:20:00');
  });

  it('links each event to its page, with every field in words, its address to the others from there, and a refusal’s reason explained', async () => {
    at('14:20:00');
    const page = await get(shopEvents(`?range=custom&from=2026-03-10T14:02&to=2026-03-10T14:05&clientAddress=${A}`));
    const items = eventItems(page.text);
    const refusedLink = /<strong class="event-title"><a href="([^"]+)">Admin token request refused<\/a>/
      .exec(items[2]!)?.[1]
      ?.replaceAll('&amp;', '&');
    assert.ok(refusedLink, items[2]);
    const view = '?range=custom&from=2026-03-10T14%3A02&to=2026-03-10T14%3A05&clientAddress=203.0.113.7';
    assert.equal(
      refusedLink,
      `/portal/apps/${shop.appId}/events/${/\/events\/(\d+)/.exec(refusedLink)?.[1]}${view}`,
      'it carries the view, for the way back',
    );
    assert.match(
      items[2]!,
      new RegExp(
        `from <a href="/portal/apps/${shop.appId}/events\\?range=custom&amp;from=2026-03-10T14%3A02&amp;to=2026-03-10T14%3A05&amp;clientAddress=203\\.0\\.113\\.7">203\\.0\\.113\\.7</a>`,
      ),
    );

    const detail = await get(refusedLink);
    assert.equal(detail.status, 200, detail.text);
    assert.match(detail.text, /<title>Admin token request refused · Events · Shop · Tessera<\/title>/);
    assert.match(
      detail.text,
      new RegExp(`<a href="${shopEvents(view).replaceAll('&', '&amp;').replace('?', '\\?')}">Back to the events</a>`),
    );
    assert.match(detail.text, /aria-current="page">Events</);
    assert.match(
      detail.text,
      /<h2 class="event-page-title refused" data-event-id="\d+" data-type="token\.refused">Admin token request refused<\/h2>/,
    );
    const facts = Object.fromEntries(
      [...detail.text.matchAll(/<div><dt>([^<]+)<\/dt><dd[^>]*>([\s\S]*?)<\/dd><\/div>/g)].map((match) => [
        match[1],
        match[2]!
          .replace(/<[^>]+>/g, ' ')
          .replace(/\s+/g, ' ')
          .trim(),
      ]),
    );
    assert.deepEqual(
      Object.keys(facts),
      ['What', 'When', 'Who', 'Asked for', 'From', 'Reason', 'Event id'],
      'its one detail is the reason',
    );
    assert.equal(facts.What, 'Request refused token.refused');
    assert.equal(facts.When, '2026-03-10 14:02:00 UTC (2026-03-10T14:02:00.000Z)');
    assert.equal(facts.Who, 'Someone without valid credentials');
    assert.equal(facts['Asked for'], 'An admin token, with a ClientID and a ClientSecret');
    assert.match(
      facts.From,
      /^203\.0\.113\.7 Every event from 203\.0\.113\.7 in the last 30 days Events from 203\.0\.113\.7 within 30 minutes of this one$/,
    );
    assert.match(
      facts.Reason,
      /^Wrong ClientID or ClientSecret invalid_client The ClientID and ClientSecret sent do not match: .* someone guessing\.$/,
    );
    assert.match(facts['Event id'], /^\d+$/);
    assert.match(detail.text, new RegExp(`<a href="/portal/apps/${shop.appId}/events\\?range=30d&amp;clientAddress=203\\.0\\.113\\.7">`));
    const around = /<a href="([^"]+)">Events from 203\.0\.113\.7 within 30 minutes of this one<\/a>/
      .exec(detail.text)?.[1]
      ?.replaceAll('&amp;', '&');
    assert.ok(around);
    const aroundPage = await get(around);
    assert.deepEqual(
      listed(aroundPage.text).map(([time]) => time),
      ['14:05:00', '14:04:59', '14:03:20', '14:02:00', '14:01:59'],
      'from 13:32 to 14:32',
    );
    // The event as the API gives it, for a ticket.
    const json = /<pre class="commands">([\s\S]*?)<\/pre>/.exec(detail.text)?.[1]?.replaceAll('&quot;', '"');
    assert.deepEqual(JSON.parse(json!), {
      id: facts['Event id'],
      type: 'token.refused',
      at: '2026-03-10T14:02:00.000Z',
      appId: shop.appId,
      principal: null,
      attempted: 'admin',
      clientAddress: A,
      details: { reason: 'invalid_client' },
    });

    const tokenLink = /<a href="([^"]+)">Token refused<\/a>/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
    assert.match(eventItems(page.text)[0]!, /<li>invalid, expired or revoked token<\/li>/);
    const token = await get(tokenLink!);
    assert.match(token.text, /The bearer token sent is not one this app accepts/);
    assert.doesNotMatch(token.text, /<dt>Asked for<\/dt>/);
    const month = await get(shopEvents('?range=30d'));
    const creationId = /data-event-id="(\d+)" data-type="app\.owner_changed"/.exec(month.text)?.[1];
    assert.ok(creationId, month.text.slice(month.text.indexOf('<h2 id="log"')));
    const creation = await get(shopEvents(`/${creationId}`));
    assert.match(creation.text, /<div><dt>Who<\/dt><dd>The operator \(command line\)<\/dd><\/div>/);
    assert.match(creation.text, /<div><dt>From<\/dt><dd class="event-from">The command line: no client address<\/dd><\/div>/);
    // The app's creation, with its owner: not a change of owner from "none".
    assert.match(creation.text, /<h2 class="event-page-title[^"]*"[^>]*>App created<\/h2>/);
    assert.match(creation.text, /<li>Owner: investigator@example\.com<\/li>/);
    assert.doesNotMatch(creation.text, /Previous owner|Created: yes/);
  });

  it('says what a revocation did on its page', async () => {
    at('14:20:00');
    owner = await signInOverHttp(timed, 'investigator@example.com');
    const settings = await owner.page(`/portal/apps/${shop.appId}/settings`);
    const answer = await owner.post(`/portal/apps/${shop.appId}/revoke-tokens`, { _csrf: settings.csrf, kind: 'admin', confirm: 'yes' });
    assert.equal(answer.status, 303, answer.text);
    const list = await owner.get(shopEvents('?type=token.revoked'));
    const link = /<a href="([^"]+)">Admin tokens revoked<\/a>/.exec(list.text)?.[1]?.replaceAll('&amp;', '&');
    const detail = await owner.get(link!);
    assert.match(
      detail.text,
      /<div><dt>What it did<\/dt><dd><ul class="event-details-list"><li>Revoked every admin token of the app: 2<\/li><\/ul><\/dd><\/div>/,
    );
    assert.match(detail.text, /<div><dt>Who<\/dt><dd>investigator@example\.com<\/dd><\/div>/, 'an email as it is');
    assert.doesNotMatch(detail.text.replace(/<pre[\s\S]*<\/pre>/, ''), /count: |scope: |kind: /);
  });

  it('carries the range and the filters in the pager and the live updates of a range that ends now', async () => {
    at('14:21:00');
    for (let index = 0; index < 30; index++) assert.equal((await wrongSecret(A)).status, 401);
    const page = await get(shopEvents(`?range=1h&clientAddress=${A}&reason=invalid_client`));
    assert.equal(listed(page.text).length, 25);
    const older = /<a href="([^"]+)" rel="next">Older events<\/a>/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
    assert.match(older!, /\?range=1h&reason=invalid_client&clientAddress=203\.0\.113\.7&cursor=\d+$/);
    const second = await owner.get(older!);
    assert.ok(listed(second.text).length > 0);
    assert.ok(listed(second.text).every(([, type, address]) => type === 'token.refused' && address === A));
    assert.match(
      second.text,
      /<a href="\/portal\/apps\/\w+\/events\?range=1h&amp;reason=invalid_client&amp;clientAddress=203\.0\.113\.7">Newest events<\/a>/,
    );

    const live = /data-live="([^"]+)" data-newest="(\d+)"/.exec(page.text);
    assert.equal(
      live?.[1]?.replaceAll('&amp;', '&'),
      `/portal/apps/${shop.appId}/events/live?range=1h&reason=invalid_client&clientAddress=203.0.113.7`,
    );
    assert.equal((await wrongSecret(B)).status, 401);
    at('12:00:00'); // recorded late, as a write tried again after an outage: an earlier instant than the range's
    assert.equal((await wrongSecret(A)).status, 401);
    at('14:21:30');
    assert.equal((await wrongSecret(A)).status, 401);
    const update = JSON.parse((await owner.get(`${live[1].replaceAll('&amp;', '&')}&after=${live[2]}`)).text);
    assert.equal(update.count, 1, 'the refusal from A of the last hour only');
    assert.match(update.items, /<time datetime="2026-03-10T14:21:30\.000Z">/);
    assert.match(update.items, /data-type="token\.refused"/);
    assert.match(update.charts, /id="chart-tokens" data-per="minute"/);
    const custom = await owner.get(`/portal/apps/${shop.appId}/events/live?range=custom&from=2026-03-10T14:00&to=2026-03-10T14:10`);
    assert.equal(custom.status, 400);
    assert.match(custom.text, /A custom range is not updated live/);
  });

  describe('shows a mistake in the range or the address beside the form, with what was typed, status 400', () => {
    before(() => at('14:22:00'));
    const custom = '?range=custom';
    const mistakes: { name: string; query: string; message: RegExp; field: string }[] = [
      { name: 'a custom range without From', query: custom, message: /A custom range needs a From/, field: 'event-from' },
      { name: 'without To', query: `${custom}&from=2026-03-10T14:02`, message: /A custom range needs a To/, field: 'event-to' },
      {
        name: 'To before From',
        query: `${custom}&from=2026-03-10T14:05&to=2026-03-10T14:02`,
        message: /To must be after From/,
        field: 'event-to',
      },
      {
        name: 'To equal to From',
        query: `${custom}&from=2026-03-10T14:05&to=2026-03-10T14:05`,
        message: /To must be after From/,
        field: 'event-to',
      },
      {
        name: 'more than 90 days',
        query: `${custom}&from=2026-01-01T00:00&to=2026-04-01T00:01`,
        message: /at most 90 days apart/,
        field: 'event-to',
      },
      {
        name: 'From "yesterday"',
        query: `${custom}&from=yesterday&to=2026-03-10T14:05`,
        message: /From must be a date and a time in UTC/,
        field: 'event-from',
      },
      {
        name: 'From on February 30',
        query: `${custom}&from=2026-02-30T14:00&to=2026-03-10T14:05`,
        message: /From must be a date and a time in UTC/,
        field: 'event-from',
      },
      {
        name: 'From of 5000 digits',
        query: `${custom}&from=${'9'.repeat(5000)}&to=2026-03-10T14:05`,
        message: /From must be a date and a time in UTC/,
        field: 'event-from',
      },
      { name: 'an unknown range', query: '?range=week', message: /Choose one of the time ranges/, field: 'range-15m' },
      {
        name: 'the address "localhost"',
        query: '?clientAddress=localhost',
        message: /The client address must be an IPv4 or IPv6 address/,
        field: 'event-address',
      },
      {
        name: 'an address of 5000 digits',
        query: `?clientAddress=${'1'.repeat(5000)}`,
        message: /The client address must be/,
        field: 'event-address',
      },
      { name: 'an address range', query: '?clientAddress=203.0.113.0%2F24', message: /The client address must be/, field: 'event-address' },
    ];
    for (const { name, query, message, field } of mistakes) {
      it(name, async () => {
        const answer = await get(shopEvents(query));
        assert.equal(answer.status, 400, `${query.slice(0, 60)}: ${answer.text.slice(0, 200)}`);
        assert.match(
          answer.text,
          new RegExp(`<p class="alert" role="alert" id="events-view-error">[^<]*${message.source}`),
          query.slice(0, 60),
        );
        assert.match(
          answer.text,
          new RegExp(`id="${field}"[^>]*aria-invalid="true"[^>]*autofocus|id="${field}"[^>]*aria-invalid="true"`),
          query.slice(0, 60),
        );
        assert.ok(
          answer.text.length < 20_000 && !answer.text.includes('9'.repeat(100)) && !answer.text.includes('1'.repeat(100)),
          'a long value is not shown whole',
        );
        assert.doesNotMatch(answer.text, /data-event-id/);
      });
    }

    it('keeps what was typed in the form', async () => {
      const kept = await get(
        shopEvents('?range=custom&from=2026-03-10T14:05&to=2026-03-10T14:02&clientAddress=203.0.113.7&type=token.refused'),
      );
      assert.match(kept.text, /name="from" value="2026-03-10T14:05"/);
      assert.match(kept.text, /name="clientAddress" value="203\.0\.113\.7"/);
      assert.match(kept.text, /<option value="token.refused" selected>/);
    });

    // A type or a reason comes from a list, or a link: one that is not one is the error page.
    for (const [query, message] of [
      ['?reason=Invalid', /reason must be 1 to 40 lower-case letters/],
      ['?type=token.nonsense', /Unknown event type/],
      ['?range=1h&range=1d', /range must be given once/],
    ] as const) {
      it(`${query} is the error page`, async () => {
        const answer = await get(shopEvents(query));
        assert.equal(answer.status, 400);
        assert.match(answer.text, message);
      });
    }
  });

  it('is 404 for an event that is not the app’s, an id that is none, and a developer who is no member', async () => {
    at('14:23:00');
    const page = await get(shopEvents('?range=30d'));
    const id = Number(/data-event-id="(\d+)"/.exec(page.text)?.[1]);
    const otherApp = await timed.tessera.ownedApps.create('Other', 'investigator@example.com', OPERATOR);
    for (const path of [
      shopEvents(`/${id + 10_000}`),
      shopEvents('/0'),
      shopEvents('/abc'),
      shopEvents(`/${'9'.repeat(30)}`),
      `/portal/apps/${otherApp.appId}/events/${id}`,
      `/portal/apps/0000000000000000/events/${id}`,
    ]) {
      const answer = await owner.get(path);
      assert.equal(answer.status, 404, path);
      assert.match(answer.text, /<h1>Not found<\/h1>/);
    }
    for (const path of [shopEvents(`/${id}`), shopEvents(`?clientAddress=${A}`)]) {
      stranger = await signInOverHttp(timed, 'stranger@example.com');
      const answer = await stranger.get(path);
      assert.equal(answer.status, 404, path);
      assert.doesNotMatch(answer.text, /data-event-id|203\.0\.113\.7/);
    }
    const anonymous = await fetch(`${timed.baseUrl}${shopEvents(`/${id}`)}`, { redirect: 'manual' });
    assert.equal(anonymous.status, 303);
  });
});
