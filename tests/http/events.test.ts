import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminFields,
  anonymousFields,
  basic,
  bearer,
  countTotalsOf,
  request,
  requestAs,
  requestToken,
  revokeToken,
  whoami,
  type JsonResponse,
} from '../helpers/http.js';
import { ADDRESS_A, ADDRESS_B, recordTheMorning } from '../helpers/investigation.js';
import { EVENT_SCAN_MAX } from '../../src/events/log.js';
import { makeEvent } from '../helpers/fixtures.js';
import { serverForSuite } from '../helpers/server.js';

let admin: string;

/** Small caps, so that a flood of a few thousand requests runs past them. */
const AUDIT_CAP = 10;
const REFUSALS_CAP = 50;

const server = serverForSuite(
  {
    housekeeping: {
      intervalMs: 3_600_000,
      eventRetentionMs: 30 * 86_400_000,
      maxEventsPerApp: AUDIT_CAP,
      maxRefusalsPerApp: REFUSALS_CAP,
      jwtKeyRotationMs: 0,
    },
  },
  async () => {
    admin = (await requestToken(server, adminFields(server))).body.access_token;
  },
);

const events = (query = '', appUrl = server.appUrl, token = admin) => requestAs(`${appUrl}/events${query}`, bearer(token));

const counts = (query = '', appUrl = server.appUrl, token = admin) => requestAs(`${appUrl}/events/counts${query}`, bearer(token));

/** Runs `send` `total` times, `concurrency` at a time; returns how many answered each status. */
async function flood(total: number, send: () => Promise<JsonResponse>, concurrency = 16): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let started = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < total) {
        started++;
        const { status } = await send();
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

/** Events are written just after the request is answered: wait until `count` of them are there. */
async function eventsWhen(query: string, ready: (list: any[]) => boolean, appUrl = server.appUrl, token = admin): Promise<any[]> {
  const deadline = Date.now() + 2000;
  for (;;) {
    const response = await events(query, appUrl, token);
    assert.equal(response.status, 200, response.text);
    if (ready(response.body.events)) return response.body.events;
    if (Date.now() > deadline) assert.fail(`events never became ready: ${response.text}`);
    await sleep(20);
  }
}

describe('GET /api/apps/{appId}/events', () => {
  it('records admin tokens issued, refusals, revocations and configuration changes, newest first, with no secret or token', async () => {
    const anonymous = (await requestToken(server, anonymousFields(server))).body.access_token as string;
    assertError(await requestToken(server, adminFields(server, { client_secret: 'wrong-secret-value' })), 401, 'invalid_client');
    assertError(await whoami(server.appUrl, bearer(`${anonymous.slice(0, -3)}AAA`)), 401, 'INVALID_TOKEN');
    const other = (await requestToken(server, anonymousFields(server))).body.access_token as string;
    await revokeToken(server.appUrl, anonymous); // by itself: counted only
    await revokeToken(server.appUrl, other, bearer(admin)); // by the admin: a row
    await request(`${server.appUrl}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ requireAppKey: false }),
    });

    const list = await eventsWhen('', (list) => list.some((event) => event.type === 'app.configuration_changed'));
    const summary = list.map((event) => [event.type, event.principal, event.details.reason ?? event.details.scope ?? null]);
    assert.deepEqual(summary, [
      ['app.configuration_changed', 'admin', null],
      ['token.revoked', 'admin', 'token'],
      ['token.refused', null, 'invalid_token'],
      ['token.refused', null, 'invalid_client'],
      ['token.issued', 'admin', null],
    ]);
    for (const event of list) {
      assert.equal(event.appId, server.app.appId);
      assert.equal(event.clientAddress, '127.0.0.1');
      assert.ok(!Number.isNaN(Date.parse(event.at)));
      assert.match(event.id, /^[0-9]+$/);
    }
    assert.deepEqual(list[0].details, { requireAppKey: false });
    const text = JSON.stringify(list);
    for (const secret of [server.app.clientSecret, server.app.appKey, anonymous, admin, 'wrong-secret-value']) {
      assert.equal(text.includes(secret), false, 'no secret or token in events');
    }

    // Every event of a request is counted, rows or not; a change written with its event is not.
    assert.deepEqual(countTotalsOf(await counts()), {
      'token.issued admin': 1,
      'token.issued anonymous': 2,
      'token.refused attempted:admin invalid_client': 1,
      'token.refused - invalid_token': 1,
      'token.revoked anonymous': 1,
      'token.revoked admin': 1,
    });
  });

  it('names what a refused attempt asked to be, and who is known (its address), never the admin or an anonymous user as its actor', async () => {
    const guessed = await createConfiguredApp(server, { requireAppKey: true }, 'Guessed at');
    const guessedAdmin = (await requestToken(guessed, adminFields(guessed))).body.access_token as string;
    assertError(await requestToken(guessed, adminFields(guessed, { client_secret: 'wrong-secret' })), 401, 'invalid_client');
    assertError(await requestToken(guessed, anonymousFields(guessed, { client_secret: 'wrong-app-key' })), 401, 'invalid_client');
    assertError(await whoami(guessed.appUrl, bearer('A'.repeat(43))), 401, 'INVALID_TOKEN');

    const list = await eventsWhen('', (listed) => listed.length >= 5, guessed.appUrl, guessedAdmin);
    assert.deepEqual(
      list.map((event) => [event.type, event.principal, event.attempted, event.details.reason ?? null, event.clientAddress]),
      [
        ['token.refused', null, null, 'invalid_token', '127.0.0.1'],
        ['token.refused', null, 'anonymous', 'invalid_client', '127.0.0.1'],
        ['token.refused', null, 'admin', 'invalid_client', '127.0.0.1'],
        ['token.issued', 'admin', null, null, '127.0.0.1'],
        ['app.configuration_changed', 'operator', null, null, null],
      ],
    );
    const totals = (await counts('?per=minute', guessed.appUrl, guessedAdmin)).body.totals as any[];
    assert.deepEqual(
      totals.filter((total) => total.type === 'token.refused').sort((a, b) => String(a.attempted).localeCompare(String(b.attempted))),
      [
        { type: 'token.refused', principal: null, attempted: 'admin', reason: 'invalid_client', count: 1 },
        { type: 'token.refused', principal: null, attempted: 'anonymous', reason: 'invalid_client', count: 1 },
        { type: 'token.refused', principal: null, attempted: null, reason: 'invalid_token', count: 1 },
      ],
    );
  });

  it('pages with limit and cursor, and filters by type', async () => {
    for (let i = 0; i < 5; i++) await requestToken(server, adminFields(server));
    const all = await eventsWhen('?limit=500', (list) => list.filter((event) => event.type === 'token.issued').length >= 6);
    const pages: any[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const response = await events(`?limit=2${cursor === '' ? '' : `&cursor=${cursor}`}`);
      assert.ok(response.body.events.length <= 2);
      pages.push(...response.body.events);
      cursor = response.body.nextCursor;
    }
    assert.deepEqual(
      pages.map((event) => event.id),
      all.map((event) => event.id),
    );
    const issued = (await events('?type=token.issued&limit=500')).body;
    assert.deepEqual(
      issued.events,
      all.filter((event) => event.type === 'token.issued'),
    );
    assert.equal(issued.nextCursor, null);
  });

  it('shows an answered action to the next read through the same instance, without waiting', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Read your writes');
    const freshAdmin = (await requestToken(fresh, adminFields(fresh))).body.access_token as string;
    for (let issued = 1; issued <= 5; issued++) {
      assert.equal((await requestToken(fresh, anonymousFields(fresh))).status, 200);
      assertError(await requestToken(fresh, adminFields(fresh, { client_secret: 'wrong' })), 401, 'invalid_client');
      const refused = (await events('?type=token.refused&limit=500', fresh.appUrl, freshAdmin)).body.events;
      assert.equal(refused.length, issued, 'the event of the refusal just answered is not there yet');
      const totals = countTotalsOf(await counts('?per=minute', fresh.appUrl, freshAdmin));
      assert.equal(totals['token.issued anonymous'], issued, 'the count of the token just answered is not there yet');
    }
  });

  it('keeps the admin events through a flood of anonymous tokens and refused attempts, and counts every one exactly', async () => {
    const flooded = await createConfiguredApp(server, { requireAppKey: true }, 'Flooded');
    const floodedAdmin = (await requestToken(flooded, adminFields(flooded))).body.access_token as string;
    const anonymousToken = () => requestToken(flooded, anonymousFields(flooded));
    const victim = (await anonymousToken()).body.access_token as string;
    assert.equal((await revokeToken(flooded.appUrl, victim, bearer(floodedAdmin))).status, 200);
    const patched = await request(`${flooded.appUrl}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(floodedAdmin), 'content-type': 'application/json' },
      body: JSON.stringify({ anonymousTokenMaxLifetimeSeconds: 3600 }),
    });
    assert.equal(patched.status, 200, patched.text);
    await server.tessera.events.flush();
    const auditBefore = (await events('?limit=500', flooded.appUrl, floodedAdmin)).body.events;
    assert.deepEqual(
      auditBefore.map((event: any) => [event.type, event.principal]),
      [
        ['app.configuration_changed', 'admin'],
        ['token.revoked', 'admin'],
        ['token.issued', 'admin'],
        ['app.configuration_changed', 'operator'],
      ],
    );

    // Nothing here needs a secret: the AppID and AppKey are public, the rest is wrong on purpose.
    const issued = await flood(1_500, anonymousToken);
    const selfRevoked = await flood(200, async () => revokeToken(flooded.appUrl, (await anonymousToken()).body.access_token));
    const wrongSecret = await flood(600, () => requestToken(flooded, adminFields(flooded, { client_secret: 'wrong-secret' })));
    const wrongAppKey = await flood(300, () => requestToken(flooded, anonymousFields(flooded, { client_secret: 'wrong-app-key' })));
    const badToken = await flood(600, () => whoami(flooded.appUrl, bearer('A'.repeat(43))));
    assert.deepEqual(
      [issued, selfRevoked, wrongSecret, wrongAppKey, badToken],
      [{ 200: 1_500 }, { 200: 200 }, { 401: 600 }, { 401: 300 }, { 401: 600 }],
    );

    await server.tessera.events.flush();
    await server.tessera.housekeeping.run();

    const all = (await events('?limit=500', flooded.appUrl, floodedAdmin)).body.events as any[];
    const audit = all.filter((event) => event.type !== 'token.refused');
    assert.deepEqual(audit, auditBefore, 'an admin event was removed, or an anonymous one written');
    const refusals = all.filter((event) => event.type === 'token.refused');
    assert.equal(refusals.length, REFUSALS_CAP);
    assert.deepEqual(
      refusals.slice(0, 3).map((event) => [event.principal, event.details.reason, event.clientAddress]),
      [
        [null, 'invalid_token', '127.0.0.1'],
        [null, 'invalid_token', '127.0.0.1'],
        [null, 'invalid_token', '127.0.0.1'],
      ],
    );

    assert.deepEqual(countTotalsOf(await counts('?per=day', flooded.appUrl, floodedAdmin)), {
      'token.issued admin': 1,
      'token.issued anonymous': 1 + 1_500 + 200,
      'token.revoked admin': 1,
      'token.revoked anonymous': 200,
      'token.refused attempted:admin invalid_client': 600,
      'token.refused attempted:anonymous invalid_client': 300,
      'token.refused - invalid_token': 600,
    });
    const perMinute = (await counts('?per=minute', flooded.appUrl, floodedAdmin)).body;
    const summed = perMinute.buckets.flatMap((bucket: any) => bucket.counts).reduce((sum: number, kind: any) => sum + kind.count, 0);
    assert.equal(summed, 1 + 1_701 + 1 + 200 + 600 + 300 + 600, 'the buckets add up to the totals');
  });

  it('answers counts per minute, hour or day, with totals, the busiest kind first', async () => {
    const app = await createConfiguredApp(server, {}, 'Counted');
    const appAdmin = (await requestToken(app, adminFields(app))).body.access_token as string;
    for (let i = 0; i < 3; i++) await requestToken(app, anonymousFields(app));
    const now = Date.now();
    for (const [per, span] of [
      ['minute', 3_600_000],
      ['hour', 86_400_000],
      ['day', 30 * 86_400_000],
    ] as const) {
      const response = await counts(`?per=${per}`, app.appUrl, appAdmin);
      assert.equal(response.status, 200, response.text);
      const body = response.body;
      assert.deepEqual(Object.keys(body), ['appId', 'per', 'since', 'until', 'totals', 'buckets']);
      assert.equal(body.appId, app.appId);
      assert.equal(body.per, per);
      const until = Date.parse(body.until);
      assert.ok(until >= now && until < now + 5_000, body.until);
      const periodMs = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[per];
      assert.equal(Date.parse(body.since) % periodMs, 0, `since starts a ${per}: ${body.since}`);
      assert.ok(until - Date.parse(body.since) >= span && until - Date.parse(body.since) < span + periodMs);
      assert.deepEqual(body.totals, [
        { type: 'token.issued', principal: 'anonymous', attempted: null, reason: null, count: 3 },
        { type: 'token.issued', principal: 'admin', attempted: null, reason: null, count: 1 },
      ]);
      for (const bucket of body.buckets) assert.equal(Date.parse(bucket.start) % periodMs, 0);
    }
    const window = await counts(`?per=hour&since=2020-01-01T00:30:00Z&until=2020-01-02T00:00:00%2B01:00`, app.appUrl, appAdmin);
    assert.equal(window.status, 200, window.text);
    assert.deepEqual(window.body, {
      appId: app.appId,
      per: 'hour',
      since: '2020-01-01T00:00:00.000Z',
      until: '2020-01-01T23:00:00.000Z',
      totals: [],
      buckets: [],
    });
    const defaults = await counts('', app.appUrl, appAdmin);
    assert.equal(defaults.body.per, 'hour');
  });

  it('refuses a bad per, since or until with 400 invalid_request', async () => {
    for (const query of [
      '?per=week',
      '?per=Minute',
      '?per=minute&per=hour',
      '?since=yesterday',
      '?since=2026-01-01',
      '?since=2026-13-01T00:00:00Z',
      '?since=1700000000000',
      '?until=2026-01-01T00:00:00',
      '?since=1969-12-31T23:59:59Z',
      '?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z',
      '?since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z',
      '?per=minute&since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:01Z',
      '?per=hour&since=2026-01-01T00:00:00Z&until=2026-03-02T00:00:01Z',
      '?per=day&since=2020-01-01T00:00:00Z&until=2026-01-01T00:00:00Z',
    ]) {
      assertError(await counts(query), 400, 'invalid_request');
    }
    assert.equal((await counts('?per=minute&since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00Z')).status, 200, '1440 minutes');
    const tooMany = await counts('?per=minute&since=2026-01-01T00:00:00Z&until=2026-01-03T00:00:00Z');
    assert.match(tooMany.body.message, /2880 buckets of a minute; at most 1440/);
  });

  it('refuses a bad type, limit, cursor, since, until, reason or clientAddress with 400 invalid_request naming it', async () => {
    const cases: [string, RegExp][] = [
      ['?since=yesterday', /^since must be a date-time/],
      ['?until=2026-01-01', /^until must be a date-time/],
      ['?since=2026-02-30T00:00:00Z', /^since must be a date-time/],
      ['?since=1700000000000', /^since must be a date-time/],
      ['?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', /^since must be before until/],
      ['?since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z', /^since must be before until/],
      ['?since=2026-01-01T00:00:00Z&until=2026-04-01T00:00:01Z', /^since and until must be at most 90 days apart/],
      ['?since=2026-01-01T00:00:00Z&since=2026-01-02T00:00:00Z', /^since must not be repeated/],
      ['?reason=Invalid_Client', /^reason must be/],
      ['?reason=invalid-client', /^reason must be/],
      [`?reason=${'a'.repeat(41)}`, /^reason must be/],
      ['?reason=%27%20OR%201%3D1', /^reason must be/],
      ['?clientAddress=localhost', /^clientAddress must be an IPv4 or IPv6 address/],
      ['?clientAddress=203.0.113.256', /^clientAddress must be/],
      ['?clientAddress=203.0.113.0%2F24', /^clientAddress must be/],
      [`?clientAddress=${'1:'.repeat(30)}1`, /^clientAddress must be/],
      ['?clientAddress=%20203.0.113.7', /^clientAddress must be/],
      ['?clientAddress=1.2.3.4&clientAddress=1.2.3.5', /^clientAddress must not be repeated/],
    ];
    for (const [query, message] of cases) {
      const answer = await events(query);
      assertError(answer, 400, 'invalid_request');
      assert.match(answer.body.message, message, query);
    }
    const ninety = await events('?since=2026-01-01T00:00:00Z&until=2026-04-01T00:00:00Z&reason=invalid_client&clientAddress=2001:db8::1');
    assert.equal(ninety.status, 200, ninety.text);
  });

  it('refuses a bad type, limit or cursor with 400 invalid_request', async () => {
    for (const query of [
      '?type=token.stolen',
      '?limit=0',
      '?limit=501',
      '?limit=abc',
      '?limit=-1',
      '?cursor=abc',
      '?cursor=0',
      '?cursor=99999999999999999999',
      '?type=token.issued&type=token.refused',
    ]) {
      assertError(await events(query), 400, 'invalid_request');
    }
  });

  it("is an admin feature, and shows only the app's own events and counts", async () => {
    const anonymous = (await requestToken(server, anonymousFields(server))).body.access_token;
    for (const path of ['/events', '/events/counts']) {
      assertError(await requestAs(`${server.appUrl}${path}`, bearer(anonymous)), 403, 'ADMIN_REQUIRED');
      assertError(await requestAs(`${server.appUrl}${path}`, basic(server.app.appId)), 403, 'ADMIN_REQUIRED');
      assertError(await requestAs(`${server.appUrl}${path}`), 401, 'UNAUTHORIZED');
    }
    const other = await createConfiguredApp(server, {});
    const otherAdmin = (await requestToken(other, adminFields(other))).body.access_token;
    assertError(await events('', server.appUrl, otherAdmin), 401, 'INVALID_TOKEN');
    assertError(await counts('', server.appUrl, otherAdmin), 401, 'INVALID_TOKEN');
    await sleep(100);
    const otherEvents = (await events('', other.appUrl, otherAdmin)).body.events;
    assert.ok(otherEvents.every((event: any) => event.appId === other.appId));
    assert.deepEqual(countTotalsOf(await counts('', other.appUrl, otherAdmin)), { 'token.issued admin': 1 });
  });
});

describe('GET /api/apps/{appId}/events by time, reason and client address', () => {
  // The server's clock stands still, moved by the test; the client addresses come through a proxy.
  const clock = new FakeClock(Date.parse('2026-03-10T13:59:00Z'));
  const timed = serverForSuite({ clock, trustedProxies: ['127.0.0.1', '::1'] });

  it('answers what happened between 14:02 and 14:05 from one address, and nothing else', async () => {
    const [A, B] = [ADDRESS_A, ADDRESS_B];
    const admin = await recordTheMorning(clock, timed);

    const listed = async (query: string) => {
      const answer = await events(query, timed.appUrl, admin);
      assert.equal(answer.status, 200, answer.text);
      return (answer.body.events as any[]).map((event) => [
        event.at.slice(11, 23),
        event.type,
        event.details.reason ?? null,
        event.clientAddress,
      ]);
    };
    const window = 'since=2026-03-10T14:02:00Z&until=2026-03-10T14:05:00Z';
    assert.deepEqual(await listed(`?${window}&clientAddress=${A}`), [
      ['14:04:59.999', 'token.refused', 'invalid_token', A],
      ['14:03:20.000', 'token.issued', null, A],
      ['14:02:00.000', 'token.refused', 'invalid_client', A],
    ]);
    assert.deepEqual(await listed(`?${window}`), [
      ['14:04:59.999', 'token.refused', 'invalid_token', A],
      ['14:03:20.000', 'token.issued', null, A],
      ['14:03:10.000', 'token.refused', 'invalid_client', B],
      ['14:02:00.000', 'token.refused', 'invalid_client', A],
    ]);
    assert.deepEqual(await listed(`?clientAddress=${encodeURIComponent(B)}`), [
      ['14:06:00.000', 'token.refused', 'invalid_client', B],
      ['14:03:10.000', 'token.refused', 'invalid_client', B],
    ]);
    assert.deepEqual(await listed(`?${window}&clientAddress=${A}&reason=invalid_client`), [
      ['14:02:00.000', 'token.refused', 'invalid_client', A],
    ]);
    assert.deepEqual(await listed(`?${window}&clientAddress=${A}&type=token.issued`), [['14:03:20.000', 'token.issued', null, A]]);
    assert.deepEqual(await listed(`?reason=invalid_token`), [['14:04:59.999', 'token.refused', 'invalid_token', A]]);
    assert.deepEqual(
      await listed(`?since=2026-03-10T15:02:00%2B01:00&until=2026-03-10T15:05:00%2B01:00&clientAddress=${A}`),
      await listed(`?${window}&clientAddress=${A}`),
      'an offset names the same instants',
    );
    assert.deepEqual(await listed('?since=2026-03-10T14:05:00Z'), [
      ['14:06:00.000', 'token.refused', 'invalid_client', B],
      ['14:05:00.000', 'token.refused', 'invalid_client', A],
    ]);
    assert.deepEqual(await listed(`?until=2026-03-10T14:02:00Z&clientAddress=${A}`), [
      ['14:01:59.999', 'token.refused', 'invalid_client', A],
    ]);
    assert.deepEqual(await listed('?clientAddress=203.0.113.8'), []);

    // Pages keep the filter: one at a time, the same three.
    const paged: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: JsonResponse = await events(
        `?${window}&clientAddress=${A}&limit=1${cursor === '' ? '' : `&cursor=${cursor}`}`,
        timed.appUrl,
        admin,
      );
      assert.equal(page.status, 200, page.text);
      paged.push(...(page.body.events as any[]).map((event) => event.at.slice(11, 19)));
      cursor = page.body.nextCursor;
    }
    assert.deepEqual(paged, ['14:04:59', '14:03:20', '14:02:00']);
  });
});

describe('GET /api/apps/{appId}/events with a filter that matches few of many events', () => {
  const big = serverForSuite();

  it(`examines at most ${EVENT_SCAN_MAX} events a request: a page of fewer than asked, even none, and a cursor that reads on to every match`, async () => {
    const app = await createConfiguredApp(big, {}, 'Busy');
    const token = (await requestToken(app, adminFields(app))).body.access_token as string;
    // 45,000 token events from one address, and a refusal from another among the oldest and one among the newest 20,000.
    const total = 45_000;
    const rare = new Set([1_000, 30_000]);
    const store = big.testStore.store;
    await big.tessera.events.flush(); // the token request's event, before the others
    for (let start = 0; start < total; start += 5_000) {
      await store.events.append(
        Array.from({ length: 5_000 }, (_, i) =>
          rare.has(start + i)
            ? makeEvent(app.appId, {
                type: 'token.refused',
                principal: null,
                clientAddress: '198.51.100.77',
                details: { reason: 'invalid_client' },
              })
            : makeEvent(app.appId, { at: Date.now() }),
        ),
      );
    }
    const pages: { found: number; cursor: string | null }[] = [];
    let cursor: string | null = null;
    const found: number[] = [];
    do {
      const response = await events(
        `?clientAddress=198.51.100.77&limit=10${cursor === null ? '' : `&cursor=${cursor}`}`,
        app.appUrl,
        token,
      );
      assert.equal(response.status, 200, response.text);
      found.push(...response.body.events.map((event: { id: string }) => Number(event.id)));
      cursor = response.body.nextCursor;
      pages.push({ found: response.body.events.length, cursor });
    } while (cursor !== null && pages.length < 10);
    assert.equal(found.length, 2, JSON.stringify(pages));
    assert.ok(found[0]! > found[1]!, 'newest first');
    // 45,000 events at 20,000 a request: three requests, the second of which finds nothing.
    assert.deepEqual(
      pages.map((page) => page.found),
      [1, 0, 1],
    );
    assert.equal(pages.at(-1)!.cursor, null);

    // Following the log with a filter goes on past what it examined, whatever it found.
    const followed = await big.tessera.events.listAfter(app.appId, 0, { clientAddress: '198.51.100.77' });
    assert.equal(followed.events.length, 1, 'the oldest match, within the first events examined');
    assert.ok(followed.readTo > followed.events[0]!.id, 'it goes on from the last event it examined, past its match');
    const next = await big.tessera.events.listAfter(app.appId, followed.readTo, { clientAddress: '198.51.100.77' });
    assert.equal(next.events.length, 1, 'the next read finds the other match');
    const last = await big.tessera.events.listAfter(app.appId, next.readTo, { clientAddress: '198.51.100.77' });
    assert.deepEqual(last.events, []);
  });
});
