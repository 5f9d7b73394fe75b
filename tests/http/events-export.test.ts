import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { exportLine } from '../../src/events/export.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { adminTokenOf, anonymousTokenOf, bearer, requestAs } from '../helpers/http.js';
import { createDeveloper } from '../helpers/portal.js';
import { portalClient, signInOverHttp } from '../helpers/portal-http.js';
import { serverForSuite } from '../helpers/server.js';
import { anonymousRequest } from '../../src/request-context.js';

// An app's events to take away: the API's export (JSON Lines or CSV, streamed, with the events
// page's filters), and the portal's Download buttons, through the real server on both stores.

/** Refusals recorded beforehand: more than two pages of the export (500 events a page). */
const REFUSALS = 1_100;
let admin: string;
const server = serverForSuite({}, async (started) => {
  admin = await adminTokenOf(started);
  await anonymousTokenOf(started);
  for (let n = 0; n < REFUSALS; n++) {
    started.tessera.events.record('token.refused', started.app.appId, anonymousRequest(`203.0.113.${n % 200}`), null, {
      reason: 'invalid_token',
    });
  }
  await started.tessera.events.flush();
});

const exported = (query: string, headers: Record<string, string> = {}) =>
  fetch(`${server.appUrl}/events${query}`, { headers: { authorization: bearer(admin), ...headers } });

describe("an app's events to take away", () => {
  it('format=jsonl streams every event, newest first, as a page describes them, over several pages', async () => {
    const response = await exported('?format=jsonl');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/jsonl; charset=utf-8');
    assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename="tessera-events-[0-9a-f]+\.jsonl"$/);
    const lines = (await response.text()).split('\n');
    assert.equal(lines.pop(), '', 'every line ends with a newline');
    const events = lines.map((line) => JSON.parse(line) as { id: string; type: string; at: string; details: object });
    assert.ok(events.length >= REFUSALS + 1, `${events.length} events`);
    const ids = events.map((event) => Number(event.id));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => b - a),
      'newest first',
    );
    assert.equal(new Set(ids).size, ids.length, 'each once');
    const page = await requestAs(`${server.appUrl}/events?limit=1`, bearer(admin));
    assert.deepEqual(events[0], page.body.events[0], 'as a page gives it');
  });

  it('Accept asks for it too, and the filters of the events page apply', async () => {
    const jsonl = await exported('?type=token.issued', { accept: 'application/x-ndjson' });
    assert.equal(jsonl.headers.get('content-type'), 'application/jsonl; charset=utf-8');
    const issued = (await jsonl.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string });
    assert.ok(issued.length >= 1 && issued.every((event) => event.type === 'token.issued'));
    const byAddress = await (await exported('?format=jsonl&clientAddress=203.0.113.7')).text();
    assert.equal(byAddress.trim().split('\n').length, Math.ceil((REFUSALS - 7) / 200));
    const future = await (await exported(`?format=jsonl&since=${new Date(Date.now() + 3_600_000).toISOString()}`)).text();
    assert.equal(future, '', 'nothing in the range: an empty download');
    const page = await requestAs(`${server.appUrl}/events`, bearer(admin));
    assert.ok(Array.isArray(page.body.events), 'without format or Accept: a page of JSON, as before');
  });

  it('format=csv: a header row, then one row an event, the details as JSON', async () => {
    const response = await exported('?format=csv&reason=invalid_token');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/csv; charset=utf-8');
    const rows = (await response.text()).split('\r\n');
    assert.equal(rows.pop(), '');
    assert.equal(rows[0], 'id,at,type,principal,attempted,clientAddress,details');
    assert.equal(rows.length - 1, REFUSALS);
    assert.match(rows[1]!, /^\d+,\d{4}-\d\d-\d\dT[\d:.]+Z,token\.refused,,,203\.0\.113\.\d+,"\{""reason"":""invalid_token""\}"$/);
  });

  it('a cell a spreadsheet would run as a formula starts with a quote', () => {
    const line = exportLine('csv', {
      id: 1,
      appId: 'app',
      type: 'token.refused',
      at: 0,
      principal: null,
      clientAddress: '=HYPERLINK("https://attacker.example")',
      details: { origin: '=1+1' },
    });
    assert.equal(
      line,
      '1,1970-01-01T00:00:00.000Z,token.refused,,,"\'=HYPERLINK(""https://attacker.example"")","{""origin"":""=1+1""}"\r\n',
    );
  });

  it('refuses an unknown format, a cursor or a limit with it, and callers who may not read events', async () => {
    const refused = async (response: Response, status: number, code: string) => {
      const text = await response.text();
      assertError({ status: response.status, headers: response.headers, text, body: JSON.parse(text) }, status, code);
    };
    await refused(await exported('?format=xml'), 400, 'invalid_request');
    await refused(await exported('?format=csv&cursor=5'), 400, 'invalid_request');
    await refused(await exported('?format=csv&limit=5'), 400, 'invalid_request');
    await refused(await exported('?format=csv&since=yesterday'), 400, 'invalid_request');
    const anonymous = await anonymousTokenOf(server);
    await refused(
      await fetch(`${server.appUrl}/events?format=csv`, { headers: { authorization: bearer(anonymous) } }),
      403,
      'ADMIN_REQUIRED',
    );
    await refused(await fetch(`${server.appUrl}/events?format=csv`), 401, 'UNAUTHORIZED');
  });

  it('a store that fails before the first event is a 503; one that fails later cuts the download short, never a whole-looking file', async () => {
    const log = server.tessera.events;
    const list = log.list.bind(log);
    let calls = 0;
    const failOn = (call: number) =>
      (log.list = async (...args) => {
        calls += 1;
        if (calls === call)
          throw new TesseraError('SERVICE_UNAVAILABLE', 'The service cannot reach its database right now; try again shortly.');
        return list(...args);
      });
    try {
      calls = 0;
      failOn(1);
      const early = await exported('?format=csv');
      assert.equal(early.status, 503);
      assert.equal(((await early.json()) as { errorCode: string }).errorCode, 'SERVICE_UNAVAILABLE');
      calls = 0;
      failOn(2);
      const late = await exported('?format=jsonl');
      assert.equal(late.status, 200, 'the first page went out');
      await assert.rejects(late.text(), 'the body ends with an error, not as a complete file');
    } finally {
      log.list = list;
    }
    assert.equal((await exported('?format=csv&limit=')).status, 200, 'and the server goes on');
  });

  it("the portal's Download buttons give the range's events with the page's filters, for the app's developers only", async () => {
    const owner = await createDeveloper(server, 'export-owner@example.com');
    await createDeveloper(server, 'export-other@example.com');
    const app = await server.tessera.ownedApps.create('Exported', owner.email, OPERATOR);
    server.tessera.events.record('token.refused', app.appId, anonymousRequest('198.51.100.9'), null, { reason: 'invalid_client' });
    await server.tessera.events.flush();
    const client = await signInOverHttp(server, owner.email);
    const page = await client.page(`/portal/apps/${app.appId}/events?reason=invalid_client`);
    const csvLink = /<a class="button secondary" href="([^"]+)" download[^>]*>Download CSV<\/a>/
      .exec(page.text)?.[1]
      ?.replaceAll('&amp;', '&');
    assert.ok(csvLink !== undefined, 'a Download CSV button');
    assert.match(csvLink, /reason=invalid_client/);
    const download = await client.get(csvLink);
    assert.equal(download.status, 200, download.text.slice(0, 300));
    assert.equal(download.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.match(download.headers.get('content-disposition') ?? '', /attachment; filename="tessera-events-.+\.csv"/);
    const rows = download.text.trim().split('\r\n');
    assert.equal(rows.length, 2, rows.join('\n'));
    assert.match(rows[1]!, /198\.51\.100\.9/);
    const jsonl = await client.get(`/portal/apps/${app.appId}/events/export?format=jsonl`);
    assert.equal(jsonl.headers.get('content-type'), 'application/jsonl; charset=utf-8');
    assert.ok(jsonl.text.trim().split('\n').length >= 2, 'the app created and the refusal');

    const other = await signInOverHttp(server, 'export-other@example.com');
    assert.equal((await other.get(`/portal/apps/${app.appId}/events/export?format=csv`)).status, 404, "another developer's app");
    const signedOut = await portalClient(server).get(`/portal/apps/${app.appId}/events/export?format=csv`);
    assert.equal(signedOut.status, 303, 'to the sign-in page');
    assert.equal((await client.get(`/portal/apps/${app.appId}/events/export?format=pdf`)).status, 400);
  });
});
