import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { adminFields, anonymousFields, appOn, requestToken, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, follow, PHONE_WIDTH, screenshot, screenshots, signIn } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';

// The events page in Chromium, as a developer watches their app: its events, the range and the
// filters and the pages of older ones, new events and the chart moving while the page is open, one
// event's page, and the warning when the ClientSecret has been sent from a web page.

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let app: AppEndpoint;
/** The server's clock runs this far from the real one: to record some history in earlier hours and days. */
let offset = 0;

const browser = browserForSuite();
const server = serverForSuite({ clock: { now: () => Date.now() + offset } }, async () => {
  const owner = await createDeveloper(server, 'ada@example.com');
  // Created a month ago: its charts start then.
  offset = -30 * DAY;
  app = appOn(server, await server.tessera.ownedApps.create('Shop', owner.email, OPERATOR));
  // A day and a month of use: anonymous tokens through the day, an admin token now and then, and
  // a burst of wrong secrets six hours ago and nine days ago (someone guessing).
  const history: [number, number, number, number][] = [
    // [hours ago, anonymous, admin, refused]
    [20, 3, 1, 0],
    [16, 6, 0, 0],
    [12, 9, 1, 1],
    [9, 5, 0, 0],
    [6, 4, 0, 24],
    [3, 7, 1, 0],
    [1, 4, 0, 0],
    [3 * 24, 8, 1, 0],
    [9 * 24, 6, 0, 40],
    [15 * 24, 12, 2, 0],
    [22 * 24, 5, 0, 2],
  ];
  for (const [hoursAgo, anonymous, admin, refused] of history) {
    offset = -hoursAgo * HOUR;
    for (let index = 0; index < anonymous; index++) assert.equal((await requestToken(app, anonymousFields(app))).status, 200);
    for (let index = 0; index < admin; index++)
      assert.equal((await requestToken(app, adminFields(app, { expiresAt: Date.now() + offset + HOUR }))).status, 200);
    for (let index = 0; index < refused; index++)
      assert.equal((await requestToken(app, adminFields(app, { client_secret: 'guess' }))).status, 401);
  }
  offset = 0;
  await server.tessera.events.flush();
});

const eventsUrl = () => `${server.baseUrl}/portal/apps/${app.appId}/events`;

/** The ids of the events the page lists, top to bottom. */
async function listedIds(page: Page): Promise<number[]> {
  return await page.locator('li.event').evaluateAll((items) => items.map((item) => Number(item.getAttribute('data-event-id'))));
}

/** The text of an element as a person reads it, one space between its parts. */
async function textOf(locator: Locator): Promise<string> {
  return ((await locator.textContent()) ?? '').replace(/\s+/g, ' ').trim();
}

async function chartTotals(page: Page, id: string): Promise<{ issued: number; refused: number; bars: number }> {
  const figure = page.locator(`#${id}`);
  return {
    issued: Number(await figure.getAttribute('data-issued')),
    refused: Number(await figure.getAttribute('data-refused')),
    bars: await figure.locator('rect.bar').count(),
  };
}

describe("an app's events in the portal", () => {
  it('shows the events of the last 24 hours newest first, in words, with a chart of its hours; and of the last 30 days, in days', async () => {
    const page = await browser.newPage();
    await signIn(page, server, 'ada@example.com');
    await page.goto(eventsUrl());
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Shop');
    assert.equal(await page.getByRole('link', { name: 'Events', exact: true }).getAttribute('aria-current'), 'page');
    const ids = await listedIds(page);
    assert.equal(ids.length, 25);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => b - a),
    );
    const first = page.locator('li.event').first();
    assert.match((await first.textContent()) ?? '', /Admin token issued|Admin token request refused/);
    assert.match((await first.locator('time').getAttribute('datetime')) ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match((await first.locator('.event-who').textContent()) ?? '', /from 127\.0\.0\.1/);

    assert.equal(await page.getByLabel('Last 24 hours', { exact: true }).isChecked(), true);
    const hourly = await chartTotals(page, 'chart-tokens');
    assert.deepEqual({ issued: hourly.issued, refused: hourly.refused }, { issued: 38 + 3, refused: 25 });
    assert.equal(await page.locator('#chart-tokens').getAttribute('data-per'), 'hour');
    assert.equal(await page.getByRole('img', { name: /Last 24 hours: tokens issued and requests refused per hour/ }).count(), 1);
    await screenshots(page, 'events');
    await page.setViewportSize({ width: 375, height: 800 });
    assert.equal(await page.locator('html').evaluate((root) => root.scrollWidth), 375, 'nothing wider than a phone');
    await page.getByText('The numbers per hour').click();
    assert.equal(
      await page
        .getByRole('table', { name: /Last 24 hours, per hour/ })
        .getByRole('row')
        .count(),
      25,
    );
    assert.equal(await page.locator('html').evaluate((root) => root.scrollWidth), 375, 'the table scrolls on its own');
    // At a phone's width, every column of the table is in sight: nothing to scroll to.
    await page.setViewportSize({ width: PHONE_WIDTH, height: 800 });
    const numbers = page.locator('details.chart-numbers').first();
    const [tableWidth, frameWidth] = await numbers.evaluate((details) => [
      details.querySelector('table')!.scrollWidth,
      details.clientWidth,
    ]);
    assert.ok(tableWidth! <= frameWidth!, `the table is ${tableWidth} px wide in ${frameWidth}`);
    await screenshot(page, 'events-numbers-phone');

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByLabel('Last 30 days', { exact: true }).check();
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(new URL(page.url()).search, '?range=30d');
    const daily = await chartTotals(page, 'chart-tokens');
    assert.deepEqual({ issued: daily.issued, refused: daily.refused }, { issued: 41 + 9 + 6 + 14 + 5, refused: 25 + 40 + 2 });
    assert.equal(await page.locator('#chart-tokens').getAttribute('data-per'), 'day');
    assert.equal(await page.getByRole('img', { name: /Last 30 days: tokens issued and requests refused per day/ }).count(), 1);
    assert.equal(await page.getByLabel('Last 30 days', { exact: true }).isChecked(), true);
    await page.getByLabel('Last 15 minutes', { exact: true }).check();
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(await page.locator('#chart-tokens').getAttribute('data-per'), 'minute');
    assert.equal(await page.locator('#chart-tokens rect.bar').count(), 0, 'nothing in the last 15 minutes');
    assert.match(await textOf(page.locator('[data-no-events]')), /^No events in the last 15 minutes\. The last 30 days$/);
    await page.close();
  });

  it('filters by type with the form, and pages to older events with the link, in the same range', async () => {
    const page = await browser.newPage();
    await signIn(page, server, 'ada@example.com');
    await page.goto(eventsUrl());
    await page.getByLabel('Type').selectOption('token.refused');
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(new URL(page.url()).search, '?range=1d&type=token.refused', 'no empty field in the address');
    const types = await page.locator('li.event').evaluateAll((items) => items.map((item) => item.getAttribute('data-type')));
    assert.equal(types.length, 25, 'the 25 refusals of the last 24 hours');
    assert.deepEqual(new Set(types), new Set(['token.refused']));
    assert.equal(await page.getByRole('link', { name: 'Older events' }).count(), 0, 'the others are older than the range');

    await page.getByLabel('Last 30 days', { exact: true }).check();
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(new URL(page.url()).search, '?range=30d&type=token.refused');
    const newest = await listedIds(page);
    assert.equal(newest.length, 25);
    await follow(page, () => page.getByRole('link', { name: 'Older events' }).click());
    assert.match(new URL(page.url()).search, /^\?range=30d&type=token\.refused&cursor=\d+$/);
    assert.equal(await page.getByLabel('Type').inputValue(), 'token.refused');
    assert.equal(await page.getByLabel('Last 30 days', { exact: true }).isChecked(), true);
    const older = await listedIds(page);
    assert.equal(older.length, 25);
    assert.ok(Math.max(...older) < Math.min(...newest));
    await follow(page, () => page.getByRole('link', { name: 'Newest events' }).click());
    assert.deepEqual(await listedIds(page), newest);
    await page.close();
  });

  it('adds new events at the top while the page is open, says how many, and moves the chart', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await signIn(page, server, 'ada@example.com');
    await page.goto(eventsUrl());
    const before = await listedIds(page);
    const chartBefore = await chartTotals(page, 'chart-tokens');

    for (let index = 0; index < 5; index++)
      assert.equal((await requestToken(app, adminFields(app, { client_secret: 'guess again' }))).status, 401);
    assert.equal((await requestToken(app, adminFields(app))).status, 200);
    for (let index = 0; index < 3; index++) assert.equal((await requestToken(app, anonymousFields(app))).status, 200);

    await page.locator(`li.event >> nth=${before.length + 5}`).waitFor({ timeout: 15_000 });
    // In one update, or (rarely) two when it asked between the requests.
    await page
      .getByRole('status')
      .filter({ hasText: /^\d new events?$/ })
      .waitFor();
    const after = await listedIds(page);
    assert.equal(after.length, before.length + 6);
    assert.deepEqual(after.slice(6), before, 'the new ones on top, the others as they were');
    assert.equal(await page.locator('li.event').first().locator('.event-title').textContent(), 'Admin token issued');
    assert.equal(await page.locator('li.event.new').count(), 6);
    await page
      .locator('#chart-tokens[data-refused]')
      .and(page.locator(`[data-refused="${chartBefore.refused + 5}"]`))
      .waitFor({ timeout: 15_000 });
    const chartAfter = await chartTotals(page, 'chart-tokens');
    assert.deepEqual(
      { issued: chartAfter.issued, refused: chartAfter.refused },
      { issued: chartBefore.issued + 4, refused: chartBefore.refused + 5 },
    );
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${app.appId}/events`, 'no reload');
    assert.deepEqual(errors, [], 'no script error, nothing the Content-Security-Policy blocked');
    await page.close();
  });

  it('lists a refused admin attempt by what it asked for and from where, and a revoke-all by what it did', async () => {
    const page = await browser.newPage();
    await signIn(page, server, 'ada@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/settings`);
    await page.getByLabel('Anonymous tokens', { exact: true }).check();
    await page.getByLabel('Yes, revoke them now').check();
    await follow(page, () => page.getByRole('button', { name: 'Revoke tokens' }).click());
    assert.equal(
      await page.getByRole('status').textContent(),
      'Every anonymous token of the app issued until now is refused from now on. Clients get a new one with the AppID (and the AppKey, if the app requires it).',
    );
    assert.equal((await requestToken(app, adminFields(app, { client_secret: 'a guess' }))).status, 401);

    await page.goto(eventsUrl());
    const refused = page.locator('li.event[data-type="token.refused"]').first();
    assert.equal(await refused.locator('.event-title').textContent(), 'Admin token request refused');
    assert.equal(await textOf(refused.locator('.event-who')), 'By someone without valid credentials from 127.0.0.1');
    assert.equal(await textOf(refused.locator('.event-details')), 'wrong ClientID or ClientSecret');
    const revoked = page.locator('li.event[data-type="token.revoked"]').first();
    assert.equal(await revoked.locator('.event-title').textContent(), 'Anonymous tokens revoked');
    assert.equal(await textOf(revoked.locator('.event-who')), 'By ada@example.com from 127.0.0.1');
    assert.match(
      await textOf(revoked.locator('.event-details')),
      /^Revoked every anonymous token of the app issued up to \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    );
    await page.setViewportSize({ width: 375, height: 800 });
    assert.equal(await page.locator('html').evaluate((root) => root.scrollWidth), 375, 'nothing wider than a phone');
    await page.close();
  });

  it('warns at the top when the ClientSecret was sent from a web page, and points to rotating it', async () => {
    const exposed = await requestToken(app, adminFields(app), { origin: 'https://shop.example' });
    assert.equal(exposed.status, 400, exposed.text);
    const page = await browser.newPage();
    await signIn(page, server, 'ada@example.com');
    await page.goto(eventsUrl());
    const warning = page.getByRole('region', { name: 'The ClientSecret has leaked into a web page' });
    assert.equal(await warning.count(), 1);
    assert.match((await warning.textContent()) ?? '', /https:\/\/shop\.example/);
    assert.equal(await page.locator('li.event').first().locator('.event-title').textContent(), 'ClientSecret sent from a browser');
    // Shown with the one event of the exposure (the filter), to keep the picture short.
    await page.getByLabel('Type').selectOption('app.secret_exposed');
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(await page.locator('li.event').count(), 1);
    assert.equal(await warning.count(), 1);
    await screenshots(page, 'events-warning');
    await page.setViewportSize({ width: 375, height: 800 });
    await follow(page, () => warning.getByRole('link', { name: 'Rotate the ClientSecret' }).click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${app.appId}/rotate-secret`);
    assert.equal(await page.getByRole('heading', { name: 'Rotate the ClientSecret' }).count(), 1);

    // The overview has the same warning, whose link leads to the rotate form too, not to itself.
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await follow(page, () => warning.getByRole('link', { name: 'Rotate the ClientSecret' }).click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${app.appId}/rotate-secret`);
    await page.close();
  });
});

describe('the events page left open', () => {
  it('does not keep the session alive: after 30 minutes without a page asked for, its live updates stop and say why', async () => {
    const page = await browser.newPage();
    try {
      await signIn(page, server, 'ada@example.com');
      await page.goto(eventsUrl());
      const nextPoll = () => page.waitForResponse((response) => response.url().includes('/events/live'), { timeout: 10_000 });
      offset = 29 * 60_000;
      assert.equal((await nextPoll()).status(), 200, 'a poll 29 minutes on');
      offset = 31 * 60_000;
      assert.equal((await nextPoll()).status(), 303, 'the session ended 30 minutes after the page was opened, polls or not');
      await page.getByRole('status').filter({ hasText: 'Live updates stopped: your session has ended' }).waitFor({ timeout: 5_000 });
      await page.reload();
      assert.equal(new URL(page.url()).pathname, '/portal/sign-in');
    } finally {
      offset = 0;
      await page.close();
    }
  });
});

describe('an investigation in the portal', () => {
  // Requests come through a proxy (the test), which names the client in X-Forwarded-For; the
  // server's clock is moved to the instants of the story.
  let shift = 0;
  let shop: AppEndpoint;
  const [A, B] = ['203.0.113.7', '2001:db8::42'];
  /** The start of a minute two hours ago: the story runs from it, at +1:59 to +6:00. */
  const base = Date.now() - (Date.now() % MINUTE) - 2 * HOUR;
  const at = (ms: number) => (shift = base + ms - Date.now());
  const investigated = serverForSuite({ clock: { now: () => Date.now() + shift }, trustedProxies: ['127.0.0.1', '::1'] }, async () => {
    at(-HOUR);
    const owner = await createDeveloper(investigated, 'grace@example.com');
    shop = appOn(investigated, await investigated.tessera.ownedApps.create('Shop', owner.email, OPERATOR));
    const from = (address: string) => ({ 'x-forwarded-for': address });
    const wrongSecret = async (address: string) =>
      assert.equal((await requestToken(shop, adminFields(shop, { client_secret: 'a guess' }), from(address))).status, 401);
    at(119_000);
    await wrongSecret(A);
    at(120_000);
    await wrongSecret(A);
    at(190_000);
    await wrongSecret(B);
    at(200_000);
    assert.equal((await requestToken(shop, adminFields(shop), from(A))).status, 200);
    at(299_000);
    const badToken = await fetch(`${shop.appUrl}/whoami`, { headers: { authorization: `Bearer ${'A'.repeat(43)}`, ...from(A) } });
    assert.equal(badToken.status, 401);
    at(300_000);
    await wrongSecret(A);
    at(360_000);
    await wrongSecret(B);
    shift = 0;
    await investigated.tessera.events.flush();
  });
  /** `2026-01-31T14:02`, as a person types it in the datetime-local fields (UTC). */
  const typed = (ms: number) => new Date(ms).toISOString().slice(0, 16);

  it('answers "what happened between these two minutes from this address" with the form, then shows one event whole', async () => {
    const page = await browser.newPage();
    await signIn(page, investigated, 'grace@example.com');
    await page.goto(`${investigated.baseUrl}/portal/apps/${shop.appId}/events`);
    // As a person would: a time in From picks the custom range.
    await page.getByLabel('From (UTC)').fill(typed(base + 2 * MINUTE));
    assert.equal(await page.getByLabel('Custom range').isChecked(), true, 'typing a time chooses the custom range');
    await page.getByLabel('To (UTC)').fill(typed(base + 5 * MINUTE));
    await page.getByLabel('Client address').fill(A);
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());

    const search = new URL(page.url()).searchParams;
    assert.deepEqual(Object.fromEntries(search), {
      range: 'custom',
      from: typed(base + 2 * MINUTE),
      to: typed(base + 5 * MINUTE),
      clientAddress: A,
    });
    const items = page.locator('li.event');
    assert.deepEqual(await items.evaluateAll((list) => list.map((item) => item.getAttribute('data-type'))), [
      'token.refused',
      'token.issued',
      'token.refused',
    ]);
    assert.deepEqual(await page.locator('li.event .event-title').allTextContents(), [
      'Token refused',
      'Admin token issued',
      'Admin token request refused',
    ]);
    for (const who of await page.locator('li.event .event-who').allTextContents())
      assert.match(who, new RegExp(`from ${A.replaceAll('.', '\\.')}$`));
    assert.equal(
      await textOf(page.locator('[data-view-summary]')),
      `Events from ${new Date(base + 2 * MINUTE).toISOString().slice(0, 10)} ${typed(base + 2 * MINUTE).slice(11)} to ${typed(base + 5 * MINUTE).slice(11)} UTC from ${A}, newest first. A custom range is not updated live. Every event of this range`,
    );
    assert.equal(await page.locator('#chart-tokens').getAttribute('data-per'), 'minute');
    assert.deepEqual(await chartTotals(page, 'chart-tokens'), { issued: 1, refused: 3, bars: 4 });
    assert.equal(await page.getByLabel('Custom range').isChecked(), true);
    assert.equal(await page.getByLabel('Client address').inputValue(), A);
    assert.equal(await page.locator('ol.events[data-live]').count(), 0, 'a past range is not updated live');
    await screenshots(page, 'events-investigation');
    await page.setViewportSize({ width: 375, height: 800 });
    assert.equal(await page.locator('html').evaluate((root) => root.scrollWidth), 375, 'nothing wider than a phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // Without a filter of address, the minutes hold the other address's refusal too.
    await follow(page, () => page.getByRole('link', { name: 'Every event of this range' }).click());
    assert.equal(await page.locator('li.event').count(), 4);
    assert.equal(await page.getByLabel('Client address').inputValue(), '');

    // One event, whole: the refusal at the first minute.
    await follow(page, () => page.locator('li.event').last().getByRole('link', { name: 'Admin token request refused' }).click());
    assert.match(new URL(page.url()).pathname, new RegExp(`^/portal/apps/${shop.appId}/events/\\d+$`));
    assert.equal(await page.getByRole('heading', { level: 2 }).first().textContent(), 'Admin token request refused');
    const fact = (name: string) =>
      textOf(
        page
          .locator('.event-facts > div')
          .filter({ has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) })
          .locator('dd'),
      );
    assert.equal(await fact('Who'), 'Someone without valid credentials');
    assert.equal(await fact('Asked for'), 'An admin token, with a ClientID and a ClientSecret');
    assert.match(await fact('Reason'), /^Wrong ClientID or ClientSecret invalid_client The ClientID and ClientSecret sent do not match/);
    assert.match(
      await fact('When'),
      new RegExp(`^${new Date(base + 2 * MINUTE).toISOString().slice(0, 10)} ${typed(base + 2 * MINUTE).slice(11)}:00 UTC`),
    );
    assert.equal(
      await page.getByRole('link', { name: 'Back to the events' }).getAttribute('href'),
      `/portal/apps/${shop.appId}/events?${new URLSearchParams({ range: 'custom', from: typed(base + 2 * MINUTE), to: typed(base + 5 * MINUTE) }).toString()}`,
      'back to the range it was opened from',
    );
    await screenshots(page, 'event-detail');
    await page.setViewportSize({ width: 375, height: 800 });
    assert.equal(await page.locator('html').evaluate((root) => root.scrollWidth), 375, 'nothing wider than a phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // Its address leads to everything from there.
    await follow(page, () => page.getByRole('link', { name: `Every event from ${A} in the last 30 days` }).click());
    assert.equal(await page.getByLabel('Last 30 days', { exact: true }).isChecked(), true);
    assert.equal(await page.getByLabel('Client address').inputValue(), A);
    assert.equal(await page.locator('li.event').count(), 5);

    // A custom range the wrong way round is shown beside the form, with what was typed.
    await page.getByLabel('Custom range').check();
    await page.getByLabel('From (UTC)').fill(typed(base + 5 * MINUTE));
    await page.getByLabel('To (UTC)').fill(typed(base + 2 * MINUTE));
    const answer = page.waitForResponse((response) => response.url().includes('/events?'));
    await page.getByRole('button', { name: 'Show' }).click();
    assert.equal((await answer).status(), 400);
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('alert').textContent(), 'To must be after From.');
    assert.equal(await page.getByLabel('To (UTC)').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByLabel('From (UTC)').inputValue(), typed(base + 5 * MINUTE));
    await page.close();
  });
});
