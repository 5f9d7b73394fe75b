import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { createDeveloper, createSharedApp, follow, screenshots, signedInPage, tabsCutOrBroken } from '../helpers/portal.js';
import { serverForSuite } from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// An app's webhooks in Chromium, as the owner goes through them: the Webhooks tab (seven tabs, whole
// on a phone), the form with its types ticked, the secret shown once and a delivery the receiver
// verifies with it, the deliveries with a refusal's answer, sent again; and a collaborator, who has
// no such tab.

const browser = browserForSuite();
const receiver = new WebhookReceiver();
const server = serverForSuite({ webhookDestinations: { allowHttp: true, allowPrivate: true } }, async () => {
  await receiver.start();
  await createDeveloper(server, 'owner@example.com');
  await createDeveloper(server, 'collaborator@example.com');
});
after(() => receiver.close());

/** Whether no element of the page is wider than the page: nothing to scroll sideways on a phone. */
async function fitsWidth(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    const wide = [];
    for (const element of document.querySelectorAll('main *')) {
      if (element.closest('pre')) continue;
      const box = element.getBoundingClientRect();
      if (box.right > width + 1) wide.push(element.tagName + (element.id ? '#' + element.id : '') + ' ' + Math.round(box.right));
    }
    if (document.documentElement.scrollWidth > width + 1) wide.push('the page scrolls sideways');
    return wide;
  })()`);
}

async function onPhone(page: Page, check: () => Promise<void>): Promise<void> {
  for (const width of [320, 390]) {
    await page.setViewportSize({ width, height: 700 });
    await check();
    assert.deepEqual(await fitsWidth(page), [], `${page.url()} at ${width} px`);
    assert.deepEqual(await tabsCutOrBroken(page, width), [], `the tabs at ${width} px`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

describe("an app's webhooks in the portal", () => {
  it('the owner adds a webhook, copies its secret once, sees its deliveries and sends one again', async () => {
    const app = await createSharedApp(server, 'Orders', 'owner@example.com', 'collaborator@example.com');
    // One to alerts only, whose secret was rotated: the list shows both kinds.
    const alerts = await server.tessera.webhooks.create(
      app.appId,
      { url: 'http://localhost:4000/tessera/alerts', eventTypes: ['app.secret_exposed', 'app.refusal_burst', 'credential.refused'] },
      OPERATOR,
    );
    await server.tessera.webhooks.rotateSecret(app.appId, alerts.webhook.id, OPERATOR);

    const page = await signedInPage(browser, server, 'owner@example.com');
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await follow(page, () => page.getByRole('link', { name: 'Webhooks', exact: true }).click());
    assert.equal(new URL(page.url()).pathname, `/portal/apps/${app.appId}/webhooks`);
    assert.equal(await page.getByRole('link', { name: 'Webhooks', exact: true }).getAttribute('aria-current'), 'page');
    assert.equal(await page.getByLabel(/Settings changed/).isChecked(), true);

    await page.getByLabel('URL', { exact: true }).fill(receiver.url);
    await page.getByLabel(/Invitation withdrawn/).uncheck();
    await follow(page, () => page.getByRole('button', { name: 'Add webhook' }).click());
    const secret = (await page.locator('[data-webhook-secret]').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    receiver.secrets.push(secret);
    await onPhone(page, async () => {});

    await follow(page, () => page.getByRole('link', { name: 'Back to the webhooks' }).click());
    assert.equal(await page.locator('[data-webhook-secret]').count(), 0);
    await screenshots(page, 'webhooks');
    await onPhone(page, async () => {});

    // A change the receiver takes, then one it refuses with an answer of its own.
    await server.tessera.apps.configure(app.appId, { anonymousTokenMaxLifetimeSeconds: 600 }, OPERATOR);
    await server.tessera.webhookSender.sendDue();
    assert.equal(receiver.events().length, receiver.received.length, 'every delivery verified with the secret the page showed');
    receiver.answer = () => ({ status: 503, body: '{"error":"maintenance","retry":"<soon>"}' });
    await server.tessera.apps.configure(app.appId, { anonymousTokenMaxLifetimeSeconds: 900 }, OPERATOR);
    await server.tessera.webhookSender.sendDue();

    await follow(page, () => page.getByRole('link', { name: `Deliveries to ${receiver.url}` }).click());
    const waiting = page.locator('[data-state="pending"]');
    assert.equal(await waiting.count(), 1);
    assert.match((await waiting.locator('pre.answer').textContent()) ?? '', /"retry":"<soon>"/);
    await screenshots(page, 'webhook-deliveries');
    await onPhone(page, async () => {});

    receiver.answer = () => ({ status: 204 });
    await follow(page, () => waiting.getByRole('button', { name: /Send again/ }).click());
    await server.tessera.webhookSender.sendDue();
    assert.equal(await page.getByRole('status').count(), 1);
    await page.reload();
    assert.equal(await page.locator('[data-state="pending"]').count(), 0);
    assert.ok((await page.locator('[data-state="delivered"]').count()) >= 2);

    const collaborator = await signedInPage(browser, server, 'collaborator@example.com');
    await collaborator.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    assert.equal(await collaborator.getByRole('link', { name: 'Webhooks', exact: true }).count(), 0);
  });
});
