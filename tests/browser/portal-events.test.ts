import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { adminFields, anonymousFields, appOn, requestToken, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, follow, screenshot, signIn } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';

// The events page in Chromium, as a developer watches their app: its events, the filter and the
// pages of older ones, new events and the chart moving while the page is open, and the warning
// when the ClientSecret has been sent from a web page.

const HOUR = 3_600_000;

let app: AppEndpoint;
/** The server's clock runs this far from the real one: to record some history in earlier hours and days. */
let offset = 0;

const browser = browserForSuite();
const server = serverForSuite({ clock: { now: () => Date.now() + offset } }, async () => {
  const owner = await createDeveloper(server, 'ada@example.com');
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
  it('shows the events newest first, in words, with a chart of a day and a month of tokens', async () => {
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

    const hourly = await chartTotals(page, 'chart-hourly');
    assert.deepEqual({ issued: hourly.issued, refused: hourly.refused }, { issued: 38 + 3, refused: 25 });
    const daily = await chartTotals(page, 'chart-daily');
    assert.deepEqual({ issued: daily.issued, refused: daily.refused }, { issued: 41 + 9 + 6 + 14 + 5, refused: 25 + 40 + 2 });
    assert.equal(await page.getByRole('img', { name: /Last 24 hours: tokens issued and requests refused per hour/ }).count(), 1);
    await screenshot(page, 'events');
    await page.setViewportSize({ width: 375, height: 800 });
    await screenshot(page, 'events-phone');
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
    await page.close();
  });

  it('filters by type with the form, and pages to older events with the link', async () => {
    const page = await browser.newPage();
    await signIn(page, server, 'ada@example.com');
    await page.goto(eventsUrl());
    await page.getByLabel('Type').selectOption('token.refused');
    await follow(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(new URL(page.url()).search, '?type=token.refused');
    const types = await page.locator('li.event').evaluateAll((items) => items.map((item) => item.getAttribute('data-type')));
    assert.equal(types.length, 25);
    assert.deepEqual(new Set(types), new Set(['token.refused']));
    const newest = await listedIds(page);

    await follow(page, () => page.getByRole('link', { name: 'Older events' }).click());
    assert.match(new URL(page.url()).search, /^\?type=token\.refused&cursor=\d+$/);
    assert.equal(await page.getByLabel('Type').inputValue(), 'token.refused');
    const older = await listedIds(page);
    assert.ok(older.length > 0);
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
    const chartBefore = await chartTotals(page, 'chart-hourly');

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
      .locator('#chart-hourly[data-refused]')
      .and(page.locator(`[data-refused="${chartBefore.refused + 5}"]`))
      .waitFor({ timeout: 15_000 });
    const chartAfter = await chartTotals(page, 'chart-hourly');
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
      /^every anonymous token issued up to \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC is refused$/,
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
    await screenshot(page, 'events-warning');
    await page.setViewportSize({ width: 375, height: 800 });
    await screenshot(page, 'events-warning-phone');
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
