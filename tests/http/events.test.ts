import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertError } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import { adminFields, anonymousFields, basic, bearer, request, requestAs, requestToken, revokeToken, whoami } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: string;

before(async () => {
  server = await startServer();
  admin = (await requestToken(server, adminFields(server))).body.access_token;
});
after(async () => {
  await server.close();
});

const events = (query = '', appUrl = server.appUrl, token = admin) =>
  requestAs(`${appUrl}/events${query}`, bearer(token));

/** Events are written just after the request is answered: wait until `count` of them are there. */
async function eventsWhen(query: string, ready: (list: any[]) => boolean): Promise<any[]> {
  const deadline = Date.now() + 2000;
  for (;;) {
    const response = await events(query);
    assert.equal(response.status, 200, response.text);
    if (ready(response.body.events)) return response.body.events;
    if (Date.now() > deadline) assert.fail(`events never became ready: ${response.text}`);
    await sleep(20);
  }
}

describe('GET /api/apps/{appId}/events', () => {
  it('records issued, refused, revoked tokens and configuration changes, newest first, with no secret or token', async () => {
    const anonymous = (await requestToken(server, anonymousFields(server))).body.access_token as string;
    assertError(await requestToken(server, adminFields(server, { client_secret: 'wrong-secret-value' })), 401, 'invalid_client');
    assertError(await whoami(server.appUrl, bearer(`${anonymous.slice(0, -3)}AAA`)), 401, 'INVALID_TOKEN');
    await revokeToken(server.appUrl, anonymous);
    await request(`${server.appUrl}/configuration`, {
      method: 'PATCH',
      headers: { authorization: bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ requireAppKey: false }),
    });

    const list = await eventsWhen('', (list) => list.some((event) => event.type === 'app.configuration_changed'));
    const summary = list.map((event) => [event.type, event.principal, event.details.reason ?? event.details.scope ?? null]);
    assert.deepEqual(summary, [
      ['app.configuration_changed', 'admin', null],
      ['token.revoked', 'anonymous', 'token'],
      ['token.refused', null, 'invalid_token'],
      ['token.refused', 'admin', 'invalid_client'],
      ['token.issued', 'anonymous', null],
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
  });

  it('pages with limit and cursor, and filters by type', async () => {
    for (let i = 0; i < 5; i++) await requestToken(server, anonymousFields(server));
    const all = await eventsWhen('?limit=500', (list) => list.filter((event) => event.type === 'token.issued').length >= 7);
    const pages: any[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const response = await events(`?limit=2${cursor === '' ? '' : `&cursor=${cursor}`}`);
      assert.ok(response.body.events.length <= 2);
      pages.push(...response.body.events);
      cursor = response.body.nextCursor;
    }
    assert.deepEqual(pages.map((event) => event.id), all.map((event) => event.id));
    const issued = (await events('?type=token.issued&limit=500')).body;
    assert.deepEqual(issued.events, all.filter((event) => event.type === 'token.issued'));
    assert.equal(issued.nextCursor, null);
  });

  it('shows an answered action to the next read through the same instance, without waiting', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Read your writes');
    const freshAdmin = (await requestToken(fresh, adminFields(fresh))).body.access_token as string;
    for (let issued = 2; issued <= 6; issued++) {
      assert.equal((await requestToken(fresh, anonymousFields(fresh))).status, 200);
      const list = (await events('?type=token.issued&limit=500', fresh.appUrl, freshAdmin)).body.events;
      assert.equal(list.length, issued, 'the event of the token just answered is not there yet');
    }
  });

  it('refuses a bad type, limit or cursor with 400 invalid_request', async () => {
    for (const query of ['?type=token.stolen', '?limit=0', '?limit=501', '?limit=abc', '?limit=-1', '?cursor=abc', '?cursor=0', '?cursor=99999999999999999999', '?type=token.issued&type=token.refused']) {
      assertError(await events(query), 400, 'invalid_request');
    }
  });

  it('is an admin feature, and shows only the app\'s own events', async () => {
    const anonymous = (await requestToken(server, anonymousFields(server))).body.access_token;
    assertError(await events('', server.appUrl, anonymous), 403, 'ADMIN_REQUIRED');
    assertError(await requestAs(`${server.appUrl}/events`, basic(server.app.appId)), 403, 'ADMIN_REQUIRED');
    const other = await createConfiguredApp(server, {});
    const otherAdmin = (await requestToken(other, adminFields(other))).body.access_token;
    assertError(await events('', server.appUrl, otherAdmin), 401, 'INVALID_TOKEN');
    await sleep(100);
    const otherEvents = (await events('', other.appUrl, otherAdmin)).body.events;
    assert.ok(otherEvents.every((event: any) => event.appId === other.appId));
  });
});
