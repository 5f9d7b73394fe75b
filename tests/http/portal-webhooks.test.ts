import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPERATOR } from '../../src/request-context.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/webhook.js';
import { createDeveloper, createSharedApp } from '../helpers/portal.js';
import { signInOverHttp, type PortalClient, type PortalResponse } from '../helpers/portal-http.js';
import { serverForSuite, startServer } from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// An app's Webhooks page over plain HTTP, on both stores: the owner adds a webhook through the form
// (its secret shown once, never again), sees mistakes in the form, its deliveries (the receiver's
// answer escaped) and sends one again, rotates its secret and deletes it; a collaborator sees no tab
// and gets 403, another developer 404; forms without their token change nothing.

let owner: PortalClient;
let collaborator: PortalClient;
let other: PortalClient;
const receiver = new WebhookReceiver();

const server = serverForSuite({ webhookDestinations: { allowHttp: true, allowPrivate: true } }, async () => {
  for (const name of ['owner', 'collaborator', 'other']) await createDeveloper(server, `${name}@example.com`);
  owner = await signInOverHttp(server, 'owner@example.com');
  collaborator = await signInOverHttp(server, 'collaborator@example.com');
  other = await signInOverHttp(server, 'other@example.com');
});
before(() => receiver.start());
after(() => receiver.close());

const newApp = (name: string) => createSharedApp(server, name, 'owner@example.com', 'collaborator@example.com');
const listPath = (app: { appId: string }) => `/portal/apps/${app.appId}/webhooks`;

/** The form's fields as a browser sends them: a name may repeat (the types' boxes). */
function postFields(client: PortalClient, path: string, fields: [string, string][]): Promise<PortalResponse> {
  return client.send(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

/** The new-webhook form, opened and sent as `client`; without `types`, every box as the page ticks them. */
async function sendNewWebhook(client: PortalClient, app: { appId: string }, url: string, types: readonly string[] = WEBHOOK_EVENT_TYPES) {
  const { csrf, once } = await client.page(listPath(app));
  const fields: [string, string][] = [
    ['_csrf', csrf],
    ['once', once!],
    ['url', url],
    ...types.map((type): [string, string] => ['eventType', type]),
  ];
  return { response: await postFields(client, listPath(app), fields), fields };
}

function secretOf(text: string): string {
  const secret = /data-webhook-secret>(whsec_[A-Za-z0-9+/=]+)</.exec(text)?.[1];
  assert.ok(secret !== undefined, `the page shows the secret: ${text.slice(0, 400)}`);
  return secret;
}

/** A change to the app, with an event that webhooks are sent. */
async function change(app: { appId: string }, seconds: number): Promise<void> {
  await server.tessera.apps.configure(app.appId, { anonymousTokenMaxLifetimeSeconds: seconds }, OPERATOR);
}

describe("an app's Webhooks page", () => {
  it('the owner adds a webhook, its secret shown once; sees its deliveries and sends one again; rotates its secret; deletes it', async () => {
    const app = await newApp('Hooks');
    const overview = await owner.page(`/portal/apps/${app.appId}`);
    assert.match(overview.text, /<a href="\/portal\/apps\/[^"]+\/webhooks">Webhooks<\/a>/, "the owner's tab");

    const empty = await owner.page(listPath(app));
    assert.match(empty.text, /aria-current="page">Webhooks</);
    assert.match(empty.text, /No webhooks yet/);
    for (const type of WEBHOOK_EVENT_TYPES) assert.match(empty.text, new RegExp(`name="eventType" value="${type}" checked`), type);

    const { response: created, fields } = await sendNewWebhook(owner, app, receiver.url);
    assert.equal(created.status, 201, created.text.slice(0, 500));
    const secret = secretOf(created.text);
    receiver.secrets.push(secret);
    assert.match(created.text, /webhook-signature/);
    assert.match(created.text, /docs\/webhooks\.md/);
    // The answer sent again (a reload) is refused and makes nothing; the list never shows the secret.
    const again = await postFields(owner, listPath(app), fields);
    assert.equal(again.status, 409);
    const listed = await owner.page(listPath(app));
    assert.doesNotMatch(listed.text, /whsec_/);
    assert.equal((listed.text.match(/data-webhook-id="/g) ?? []).length, 1);
    assert.match(listed.text, new RegExp(`<code>${receiver.url}</code>`));
    assert.match(listed.text, /Every type: the alerts and every change to the app/);
    const webhookId = /data-webhook-id="(wh_[A-Za-z0-9_-]{22})"/.exec(listed.text)![1]!;
    const deliveriesPath = `${listPath(app)}/${webhookId}`;

    // Delivered: the receiver verified it with the secret the page showed.
    await change(app, 600);
    await server.tessera.webhookSender.sendDue();
    assert.ok(
      receiver.events().some((event) => event.type.endsWith('app.configuration_changed')),
      JSON.stringify(receiver.received.map((each) => each.refused)),
    );
    let page = await owner.page(deliveriesPath);
    assert.match(page.text, /data-state="delivered"/);
    assert.match(page.text, /<code class="status-ok">204<\/code>/);

    // Refused with an answer that is HTML: shown as text, waiting for its next attempt.
    receiver.answer = () => ({ status: 500, body: '<script>alert("answer")</script>' });
    await change(app, 700);
    await server.tessera.webhookSender.sendDue();
    page = await owner.page(deliveriesPath);
    assert.match(page.text, /data-state="pending"/);
    assert.match(page.text, /<code class="status-bad">500<\/code>/);
    assert.match(page.text, /&lt;script&gt;alert\(&quot;answer&quot;\)&lt;\/script&gt;/);
    assert.doesNotMatch(page.text, /<script>alert/);
    assert.match(page.text, /Next attempt/);
    const pendingId = /data-delivery-id="(\d+)" data-state="pending"/.exec(page.text)![1]!;

    // Sent again by hand: at once, and this time it is taken.
    receiver.answer = () => ({ status: 204 });
    const count = receiver.received.length;
    const resent = await owner.post(`${deliveriesPath}/deliveries/${pendingId}/resend`, { _csrf: page.csrf });
    assert.equal(resent.status, 303);
    assert.equal(resent.location, `${deliveriesPath}?resent=${pendingId}`);
    await server.tessera.webhookSender.sendDue();
    assert.ok(receiver.received.length > count, 'the receiver got it again');
    page = await owner.page(resent.location);
    assert.match(page.text, new RegExp(`Delivery ${pendingId} is sent again`));
    assert.match(page.text, new RegExp(`data-delivery-id="${pendingId}" data-state="delivered"`));
    // A form without its token sends nothing.
    const forged = await owner.post(`${deliveriesPath}/deliveries/${pendingId}/resend`, {});
    assert.equal(forged.status, 403);

    // A page of older deliveries, through the cursor.
    const paged = await owner.get(`${deliveriesPath}?before=${pendingId}`);
    assert.equal(paged.status, 200);
    assert.match(paged.text, /Newest deliveries/);
    assert.equal((await owner.get(`${deliveriesPath}?before=soon`)).status, 400);

    // A new secret, once; the previous one still signs, as the list says.
    const rotatePage = await owner.page(listPath(app));
    const rotated = await owner.post(`${listPath(app)}/${webhookId}/rotate-secret`, { _csrf: rotatePage.csrf, once: rotatePage.once! });
    assert.equal(rotated.status, 200, rotated.text.slice(0, 400));
    const newSecret = secretOf(rotated.text);
    assert.notEqual(newSecret, secret);
    assert.match(rotated.text, /previous secret keeps signing beside it until/);
    const reloaded = await owner.post(`${listPath(app)}/${webhookId}/rotate-secret`, { _csrf: rotatePage.csrf, once: rotatePage.once! });
    assert.equal(reloaded.status, 409);
    assert.match((await owner.page(listPath(app))).text, /Previous secret<\/dt><dd>Still signs too, until/);

    // Deleted, after a page that asks.
    const confirm = await owner.page(`${listPath(app)}/${webhookId}/delete`);
    assert.match(confirm.text, /Delete the webhook\?/);
    const deleted = await owner.post(`${listPath(app)}/${webhookId}/delete`, { _csrf: confirm.csrf });
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, `${listPath(app)}?deleted=${webhookId}`);
    const after = await owner.page(deleted.location);
    assert.match(after.text, new RegExp(`The webhook to <code>${receiver.url}</code> is deleted`));
    assert.match(after.text, /No webhooks yet/);
    assert.equal((await owner.get(deliveriesPath)).status, 404);
  });

  it('shows mistakes in the form, with what was typed, and makes nothing', async () => {
    const app = await newApp('Mistakes');
    const cases: [string, readonly string[], RegExp][] = [
      ['hooks.example.com', WEBHOOK_EVENT_TYPES, /The URL must be an absolute URL/],
      ['ftp://hooks.example.com/x', WEBHOOK_EVENT_TYPES, /The URL must be an http or https URL/],
      [receiver.url, [], /Choose at least one type of event/],
      [receiver.url, ['token.issued'], /The list of event types has &quot;token.issued&quot;/],
    ];
    for (const [url, types, message] of cases) {
      const { response } = await sendNewWebhook(owner, app, url, types);
      assert.equal(response.status, 400, url);
      assert.match(response.text, message);
      assert.match(response.text, /role="alert" id="webhook-error"/);
      assert.ok(response.text.includes(` value="${url}"`), `what was typed: ${url}`);
    }
    // The boxes as they were sent: only the one ticked stays ticked.
    const { response } = await sendNewWebhook(owner, app, 'nothing', ['app.refusal_burst']);
    assert.match(response.text, /value="app.refusal_burst" checked/);
    assert.doesNotMatch(response.text, /value="app.secret_exposed" checked/);
    assert.deepEqual(await server.tessera.webhooks.list(app.appId, OPERATOR), []);
  });

  it('the limit of webhooks is told in the form', async () => {
    const app = await newApp('Full');
    for (let index = 0; index < 10; index++) {
      await server.tessera.webhooks.create(app.appId, { url: `${receiver.url}/${index}` }, OPERATOR);
    }
    const full = await owner.page(listPath(app));
    assert.match(full.text, /This app has 10 webhooks, as many as an app may have/);
    assert.doesNotMatch(full.text, /Add webhook/);
    // A form opened before the tenth, sent after it.
    const response = await postFields(owner, listPath(app), [
      ['_csrf', full.csrf],
      ['once', full.once!],
      ['url', receiver.url],
      ['eventType', 'app.refusal_burst'],
    ]);
    assert.equal(response.status, 409);
    assert.match(response.text, /role="alert" id="webhook-error">This app has 10 webhooks/);
  });

  it('without KEY_ENCRYPTION_KEY, the form says the operator must set it (503)', async () => {
    const bare = await startServer({ keyEncryptionKey: null, webhookDestinations: { allowHttp: true, allowPrivate: true } });
    try {
      await createDeveloper(bare, 'owner@example.com');
      const app = await bare.tessera.ownedApps.create('No key', 'owner@example.com', OPERATOR);
      const client = await signInOverHttp(bare, 'owner@example.com');
      const { response } = await sendNewWebhook(client, app, receiver.url);
      assert.equal(response.status, 503);
      assert.match(response.text, /role="alert" id="webhook-error">Webhooks need the key their secrets are encrypted with/);
    } finally {
      await bare.close();
    }
  });

  it('a collaborator sees no tab and may not open or send its forms; another developer gets 404', async () => {
    const app = await newApp('Owners only');
    const made = await server.tessera.webhooks.create(app.appId, { url: receiver.url }, OPERATOR);
    const base = listPath(app);
    const overview = await collaborator.page(`/portal/apps/${app.appId}`);
    assert.doesNotMatch(overview.text, /Webhooks</);
    assert.doesNotMatch((await collaborator.page(`/portal/apps/${app.appId}/people`)).text, /\/webhooks"/);
    const paths = [base, `${base}/${made.webhook.id}`, `${base}/${made.webhook.id}/delete`];
    for (const path of paths) {
      assert.equal((await collaborator.get(path)).status, 403, path);
      assert.equal((await other.get(path)).status, 404, path);
    }
    const csrf = overview.csrf;
    for (const path of [
      base,
      `${base}/${made.webhook.id}/rotate-secret`,
      `${base}/${made.webhook.id}/delete`,
      `${base}/${made.webhook.id}/deliveries/1/resend`,
    ]) {
      const response = await collaborator.post(path, { _csrf: csrf, once: 'AAAAAAAAAAAAAAAAAAAAAA', url: receiver.url });
      assert.equal(response.status, 403, path);
    }
    assert.equal((await server.tessera.webhooks.list(app.appId, OPERATOR)).length, 1);
    assert.equal((await server.tessera.webhooks.get(app.appId, made.webhook.id, OPERATOR)).previousSecretUntil, null);
  });
});
