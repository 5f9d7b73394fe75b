import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { REFUSAL_BURST_PER_MINUTE } from '../../src/apps/attention.js';
import { OPERATOR } from '../../src/request-context.js';
import { FakeClock } from '../helpers/clock.js';
import { adminFields, appOn, bearer, requestToken, whoami, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, createSharedApp } from '../helpers/portal.js';
import { signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { startServer, type TestServer } from '../helpers/server.js';

// The list of apps flags an app whose ClientSecret leaked into a web page and was not rotated, and
// an app with a burst of refused key requests in the last hour; each flag leads to where it is
// looked into. On each store, with a clock the tests move.

const LIMIT_PER_ADDRESS = 3;

let server: TestServer;
let clock: FakeClock;
let owner: PortalClient;
let collaborator: PortalClient;
let stranger: PortalClient;
let shop: AppEndpoint;
let quiet: AppEndpoint;

/** The list item of an app on the list of apps, as HTML. */
function cardOf(text: string, appId: string): string {
  const start = text.lastIndexOf('<li', text.indexOf(`<code>${appId}</code>`));
  assert.ok(start >= 0, `the list has app ${appId}`);
  return text.slice(start, text.indexOf('\n  </li>', start));
}

async function listed(client: PortalClient, appId: string): Promise<{ page: string; card: string }> {
  await server.tessera.events.flush();
  const answer = await client.get('/portal/');
  assert.equal(answer.status, 200, answer.text);
  return { page: answer.text, card: cardOf(answer.text, appId) };
}

async function wrongSecrets(app: AppEndpoint, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await requestToken(app, adminFields(app, { client_secret: `wrong-${i}` }))).status);
  return statuses;
}

before(async () => {
  clock = new FakeClock(Date.parse('2026-11-27T14:02:30Z'));
  server = await startServer({
    clock,
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 10_000,
      adminFailuresPerAddressPerMinute: LIMIT_PER_ADDRESS,
      adminFailuresPerAppPerMinute: 1_000,
    },
  });
  const account = await createDeveloper(server, 'owner@example.com');
  await createDeveloper(server, 'helper@example.com');
  await createDeveloper(server, 'stranger@example.com');
  shop = await createSharedApp(server, 'Shop', account.email, 'helper@example.com');
  quiet = appOn(server, await server.tessera.ownedApps.create('Quiet', account.email, OPERATOR));
  [owner, collaborator, stranger] = await Promise.all([
    signInOverHttp(server, 'owner@example.com'),
    signInOverHttp(server, 'helper@example.com'),
    signInOverHttp(server, 'stranger@example.com'),
  ]);
});

after(async () => {
  await server?.close();
});

describe('the list of apps', () => {
  it('flags nothing on an app with nothing to look into, and says nothing at its top', async () => {
    const { page, card } = await listed(owner, quiet.appId);
    assert.doesNotMatch(card, /data-flag/);
    assert.doesNotMatch(card, /class="flagged"/);
    assert.doesNotMatch(page, /need(s)? attention/);
  });

  it('does not flag refused bearer tokens, however many: clients holding expired tokens send them all day', async () => {
    for (let i = 0; i < 3 * REFUSAL_BURST_PER_MINUTE; i++) assert.equal((await whoami(shop.appUrl, bearer(`expired-${i}`))).status, 401);
    assert.doesNotMatch((await listed(owner, shop.appId)).card, /data-flag/);
    clock.advance(60_000);
  });

  it(`flags a burst of refused key requests (${REFUSAL_BURST_PER_MINUTE} in a minute, throttled ones too), linking to that minute's events`, async () => {
    // One fewer than a burst: a person mistyping now and then is no burst.
    assert.deepEqual(await wrongSecrets(shop, REFUSAL_BURST_PER_MINUTE - 1), [
      ...Array(LIMIT_PER_ADDRESS).fill(401),
      ...Array(REFUSAL_BURST_PER_MINUTE - 1 - LIMIT_PER_ADDRESS).fill(429),
    ]);
    assert.doesNotMatch((await listed(owner, shop.appId)).card, /data-flag/);

    await wrongSecrets(shop, 3);
    const { page, card } = await listed(owner, shop.appId);
    assert.match(card, /class="flagged"/);
    assert.match(
      card,
      new RegExp(
        `data-flag="refusal-burst"><a href="([^"]+)">${REFUSAL_BURST_PER_MINUTE + 2} token requests refused in one minute</a> \\(${REFUSAL_BURST_PER_MINUTE + 2 - LIMIT_PER_ADDRESS} throttled\\)`,
      ),
    );
    assert.match(card, /<time datetime="2026-11-27T14:03:00.000Z">2026-11-27 14:03 UTC<\/time>/);
    assert.match(page, /<p class="alert">One of your apps needs attention/);
    assert.doesNotMatch(cardOf(page, quiet.appId), /data-flag/, 'only the app it concerns');

    const link = /data-flag="refusal-burst"><a href="([^"]+)"/.exec(card)![1]!.replaceAll('&amp;', '&');
    assert.equal(link, `/portal/apps/${shop.appId}/events?range=custom&from=2026-11-27T14%3A03&to=2026-11-27T14%3A04`);
    const events = await owner.get(link);
    assert.equal(events.status, 200, events.text);
    // That minute's refusals: the 401s listed, the throttled ones counted in the chart.
    assert.equal([...events.text.matchAll(/data-type="token.refused"/g)].length, LIMIT_PER_ADDRESS);
    assert.match(events.text, new RegExp(`data-refused="${REFUSAL_BURST_PER_MINUTE + 2}"`));
  });

  it('shows the flags to a collaborator too, and to no one else', async () => {
    assert.match((await listed(collaborator, shop.appId)).card, /data-flag="refusal-burst"/);
    const strangers = await stranger.get('/portal/');
    assert.doesNotMatch(strangers.text, new RegExp(shop.appId));
    assert.doesNotMatch(strangers.text, /data-flag/);
  });

  it('flags a ClientSecret sent from a web page until it is rotated, linking to the overview that says what to do', async () => {
    const exposed = await requestToken(quiet, adminFields(quiet), { origin: 'https://quiet.example' });
    assert.equal(exposed.status, 400, exposed.text);
    const { page, card } = await listed(owner, quiet.appId);
    assert.match(
      card,
      new RegExp(
        `data-flag="leaked-secret" data-client-id=""><a href="/portal/apps/${quiet.appId}">ClientSecret leaked into a web page</a>`,
      ),
    );
    assert.match(page, /<p class="alert">2 of your apps need attention/);
    const overview = await owner.get(`/portal/apps/${quiet.appId}`);
    assert.match(overview.text, /data-warning="secret-exposed"/);

    await server.tessera.apps.rotateSecret(quiet.appId, {}, OPERATOR);
    assert.doesNotMatch((await listed(owner, quiet.appId)).card, /data-flag/);
  });

  it("flags a credential's secret sent from a web page as the credential's: rotating the app's own does not end it, revoking the credential does", async () => {
    const credential = await server.tessera.credentials.create(quiet.appId, { name: 'Build job', scopes: ['events:read'] }, OPERATOR);
    const fields = adminFields(quiet, { client_id: credential.clientId, client_secret: credential.clientSecret });
    assert.equal((await requestToken(quiet, fields, { origin: 'https://quiet.example' })).status, 400);
    const flagged = (await listed(owner, quiet.appId)).card;
    assert.match(
      flagged,
      new RegExp(
        `data-flag="leaked-secret" data-client-id="${credential.clientId}"><a href="/portal/apps/${quiet.appId}">The credential <q>Build job</q>'s ClientSecret leaked into a web page</a> on .*: revoke the credential or rotate its secret\\.`,
      ),
    );
    assert.doesNotMatch(flagged, /data-client-id=""/, "the app's own ClientSecret is not said to have leaked");
    const overview = await owner.get(`/portal/apps/${quiet.appId}`);
    assert.match(overview.text, /The ClientSecret of the credential <q>Build job<\/q> has leaked into a web page/);
    assert.match(overview.text, new RegExp(`/portal/apps/${quiet.appId}/credentials/${credential.clientId}/revoke`));

    await server.tessera.apps.rotateSecret(quiet.appId, {}, OPERATOR);
    assert.match(
      (await listed(owner, quiet.appId)).card,
      /data-flag="leaked-secret"/,
      "rotating the app's own secret does not end a credential's",
    );
    await server.tessera.credentials.revoke(quiet.appId, credential.clientId, OPERATOR);
    assert.doesNotMatch((await listed(owner, quiet.appId)).card, /data-flag/);
  });

  it('keeps the flag while a rotation with a grace period keeps the leaked secret working, until the owner ends the grace period', async () => {
    const leaked = (await server.tessera.apps.rotateSecret(quiet.appId, {}, OPERATOR)).clientSecret;
    const leakedApp = { ...quiet, clientSecret: leaked };
    assert.equal((await requestToken(leakedApp, adminFields(leakedApp), { origin: 'https://quiet.example' })).status, 400);
    await server.tessera.apps.rotateSecret(quiet.appId, { graceSeconds: 86_400 }, OPERATOR);
    assert.equal((await requestToken(leakedApp, adminFields(leakedApp))).status, 200, 'the leaked secret works for the grace period');
    assert.match(
      (await listed(owner, quiet.appId)).card,
      /data-flag="leaked-secret" data-client-id="">.*: rotated with a grace period, it works until <time[^>]*>[^<]*<\/time>: end it now\./,
    );
    const overview = await owner.get(`/portal/apps/${quiet.appId}`);
    assert.match(overview.text, /the leaked secret still works until/);
    assert.match(
      overview.text,
      new RegExp(`href="/portal/apps/${quiet.appId}/rotate-secret#end-previous-secret">End the grace period now`),
    );

    const rotatePage = await owner.page(`/portal/apps/${quiet.appId}/rotate-secret`);
    assert.match(rotatePage.text, /<section id="end-previous-secret"/);
    // Only the owner may: a collaborator of another app is refused there.
    const collaboratorsCsrf = (await collaborator.page(`/portal/apps/${shop.appId}`)).csrf;
    assert.equal((await collaborator.post(`/portal/apps/${shop.appId}/end-previous-secret`, { _csrf: collaboratorsCsrf })).status, 403);
    const ended = await owner.post(`/portal/apps/${quiet.appId}/end-previous-secret`, { _csrf: rotatePage.csrf });
    assert.equal(ended.status, 303, ended.text);
    assert.equal(ended.location, `/portal/apps/${quiet.appId}/rotate-secret?ended=yes`);
    const after = await owner.get(ended.location);
    assert.match(after.text, /data-ended="yes">The previous secret is refused from now on/);
    assert.doesNotMatch(after.text, /<section id="end-previous-secret"/);
    assert.equal((await requestToken(leakedApp, adminFields(leakedApp))).status, 401, 'the leaked secret is refused');
    assert.doesNotMatch((await listed(owner, quiet.appId)).card, /data-flag/);
    const again = await owner.post(`/portal/apps/${quiet.appId}/end-previous-secret`, { _csrf: rotatePage.csrf });
    assert.equal(again.location, `/portal/apps/${quiet.appId}/rotate-secret?ended=none`);
  });

  it('flags a credential whose right secret came from an address it does not allow: a leaked secret at work, or a moved service', async () => {
    const credential = await server.tessera.credentials.create(
      quiet.appId,
      { name: 'Office job', scopes: ['events:read'], allowFrom: ['203.0.113.0/24'] },
      OPERATOR,
    );
    const fields = adminFields(quiet, { client_id: credential.clientId, client_secret: credential.clientSecret });
    assert.equal((await requestToken(quiet, fields)).status, 401, 'refused from 127.0.0.1');
    const { card } = await listed(owner, quiet.appId);
    assert.match(
      card,
      new RegExp(
        `data-flag="refused-elsewhere" data-client-id="${credential.clientId}"><a href="/portal/apps/${quiet.appId}/events\\?type=credential\\.refused&amp;range=1h">The credential <q>Office job</q>'s right secret was sent from 127\\.0\\.0\\.1, which it does not allow</a>`,
      ),
    );
    const events = await owner.get(`/portal/apps/${quiet.appId}/events?type=credential.refused&range=1h`);
    assert.match(events.text, /someone with the ClientSecret of \u201cOffice job\u201d/);
    await server.tessera.credentials.revoke(quiet.appId, credential.clientId, OPERATOR);
    assert.doesNotMatch((await listed(owner, quiet.appId)).card, /data-flag/);
  });

  it('forgets a burst an hour later', async () => {
    // Past the portal's idle timeout: signed in again.
    clock.advance(59 * 60_000);
    owner = await signInOverHttp(server, 'owner@example.com');
    assert.match((await listed(owner, shop.appId)).card, /data-flag="refusal-burst"/, 'still within the hour');
    clock.advance(2 * 60_000);
    const { page, card } = await listed(owner, shop.appId);
    assert.doesNotMatch(card, /data-flag/);
    assert.doesNotMatch(page, /need(s)? attention/);
  });
});
