import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { RETRY_DELAYS_MS, MAX_ATTEMPTS } from '../../src/webhooks/schedule.js';
import { MAX_PENDING_DELIVERIES, MAX_WEBHOOKS_PER_APP, WEBHOOK_EVENT_TYPES } from '../../src/webhooks/webhook.js';
import { adminTokenOf, appOn, bearer, postAs, request, requestAs, type AppEndpoint } from '../helpers/http.js';
import { serverForSuite, startServer } from '../helpers/server.js';
import { generateClientSecret } from '../../src/apps/secret-format.js';
import { generateCredentialClientId, type CredentialCreator } from 'tessera-tokens/internal/credentials/credential.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// An app's webhooks through the real server, on both stores: made, listed and refused through the
// API; their deliveries sent to a receiver that checks them with the Standard Webhooks library, tried
// again on the documented schedule, marked failed, sent again by hand; a burst of refusals told.

/** The server's clock: the real one, moved forward by the tests to reach a retry's time. */
class MovableClock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  advance(ms: number): void {
    this.offset += ms;
  }
}

const clock = new MovableClock();
const server = serverForSuite({
  clock,
  metrics: true,
  webhookDestinations: { allowHttp: true, allowPrivate: true },
  webhookTimeoutMs: 2_000,
});
const receivers: WebhookReceiver[] = [];
after(() => Promise.all(receivers.map((receiver) => receiver.close())));

async function receiver(): Promise<WebhookReceiver> {
  const started = await new WebhookReceiver().start();
  receivers.push(started);
  return started;
}

interface TestApp extends AppEndpoint {
  admin: string;
}

async function newApp(name: string): Promise<TestApp> {
  const app = appOn(server, await server.tessera.apps.create(name));
  return { ...app, admin: await adminTokenOf(app) };
}

async function createWebhook(app: TestApp, body: Record<string, unknown>) {
  return postAs(`${app.appUrl}/webhooks`, bearer(app.admin), body);
}

/** A webhook of `app` to `to`, whose secret the receiver verifies with. */
async function hook(app: TestApp, to: WebhookReceiver, eventTypes?: string[]): Promise<{ id: string; secret: string }> {
  const created = await createWebhook(app, { url: to.url, ...(eventTypes === undefined ? {} : { eventTypes }) });
  assert.equal(created.status, 201, created.text);
  to.secrets.push(created.body.secret as string);
  return { id: created.body.webhook.id as string, secret: created.body.secret as string };
}

/** A change to the app: one `app.configuration_changed` event. */
async function change(app: TestApp, tokenLifetimeSeconds = 600): Promise<void> {
  const response = await request(`${app.appUrl}/configuration`, {
    method: 'PATCH',
    headers: { authorization: bearer(app.admin), 'content-type': 'application/json' },
    body: JSON.stringify({ anonymousTokenMaxLifetimeSeconds: tokenLifetimeSeconds }),
  });
  assert.equal(response.status, 200, response.text);
}

const deliveriesOf = async (app: TestApp, webhookId: string) =>
  (await requestAs(`${app.appUrl}/webhooks/${webhookId}/deliveries`, bearer(app.admin))).body.deliveries as {
    id: string;
    eventId: string;
    eventType: string;
    state: string;
    attempts: number;
    lastStatus: number | null;
    lastError: string | null;
    lastResponse: string | null;
  }[];

const sendDue = () => server.tessera.webhookSender.sendDue();

describe('webhooks: made, listed, refused', () => {
  it('makes a webhook with a whsec_ secret shown once and stored encrypted; lists it, and deletes it', async () => {
    const app = await newApp('Webhook made');
    const to = await receiver();
    const created = await createWebhook(app, { url: to.url, eventTypes: ['credential.created', 'app.secret_exposed'] });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get('cache-control'), 'no-store');
    const { webhook, secret } = created.body as { webhook: { id: string; eventTypes: string[] }; secret: string };
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.match(webhook.id, /^wh_[A-Za-z0-9_-]{22}$/);
    assert.deepEqual(webhook.eventTypes, ['app.secret_exposed', 'credential.created'], 'in the catalogue\u2019s order');
    const stored = await server.tessera.store.webhooks.find(app.appId, webhook.id);
    assert.ok(stored !== undefined && !stored.secret.toString('latin1').includes(secret.slice(6, 20)), 'never stored as it is');

    const listed = await requestAs(`${app.appUrl}/webhooks`, bearer(app.admin));
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.webhooks, [{ ...webhook }]);
    assert.ok(!JSON.stringify(listed.body).includes('whsec_'), 'a list never shows a secret');
    const all = await createWebhook(app, { url: to.url });
    assert.deepEqual(all.body.webhook.eventTypes, WEBHOOK_EVENT_TYPES, 'by default every type but token traffic');
    assert.ok(!(all.body.webhook.eventTypes as string[]).some((type) => type.startsWith('token.')));

    const deleted = await requestAs(`${app.appUrl}/webhooks/${webhook.id}`, bearer(app.admin), 'DELETE');
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await requestAs(`${app.appUrl}/webhooks/${webhook.id}`, bearer(app.admin))).status, 404);
    const types = (await requestAs(`${app.appUrl}/events?limit=10`, bearer(app.admin))).body.events.map(
      (event: { type: string }) => event.type,
    );
    assert.deepEqual(types.slice(0, 3), ['webhook.deleted', 'webhook.created', 'webhook.created']);
  });

  it('refuses a bad URL, an unknown or token event type, and an 11th webhook, with a clear JSON error', async () => {
    const app = await newApp('Webhook refusals');
    const to = await receiver();
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{}, /url/],
      [{ url: 'hooks.example.com/in' }, /^url must be an absolute URL/],
      [{ url: 'https://user:pass@hooks.example.com/' }, /user name or password/],
      [{ url: `https://hooks.example.com/${'a'.repeat(2100)}` }, /url/],
      [{ url: 'https://nowhere.invalid/hook' }, /cannot be resolved/],
      [{ url: to.url, eventTypes: ['app.nope'] }, /eventTypes/],
      [{ url: to.url, eventTypes: ['token.issued'] }, /eventTypes/],
      [{ url: to.url, extra: 1 }, /./],
    ];
    for (const [body, message] of refusals) {
      const refused = await createWebhook(app, body);
      assert.equal(refused.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${refused.text}`);
      assert.equal(refused.body.error, 'invalid_request');
      assert.match(refused.body.error_description ?? refused.body.message ?? refused.text, message);
    }
    for (let n = 0; n < MAX_WEBHOOKS_PER_APP; n++) assert.equal((await createWebhook(app, { url: to.url })).status, 201);
    const eleventh = await createWebhook(app, { url: to.url });
    assert.equal(eleventh.status, 409, eleventh.text);
    assert.equal((await requestAs(`${app.appUrl}/webhooks`, bearer(app.admin))).body.webhooks.length, MAX_WEBHOOKS_PER_APP);
    const anonymous = await request(`${app.appUrl}/webhooks`, {
      headers: { authorization: `Basic ${Buffer.from(`${app.appId}:x`).toString('base64')}` },
    });
    assert.equal(anonymous.status, 403, 'only an admin');
  });

  it('by default, only https to public addresses: http, loopback, private and metadata addresses are refused', async () => {
    const strict = await startServer();
    try {
      const app = appOn(strict, strict.app);
      const admin = await adminTokenOf(app);
      for (const [url, message] of [
        ['http://hooks.example.com/in', /https URL \(the operator allows http with WEBHOOK_ALLOW_HTTP=1\)/],
        ['https://127.0.0.1/in', /127\.0\.0\.1, which is not a public address.*WEBHOOK_ALLOW_PRIVATE=1/],
        ['https://localhost/in', /not a public address/],
        ['https://169.254.169.254/latest/meta-data', /169\.254\.169\.254, which is not a public address/],
        ['https://10.1.2.3/in', /not a public address/],
        ['https://[::1]/in', /not a public address/],
      ] as const) {
        const refused = await postAs(`${app.appUrl}/webhooks`, bearer(admin), { url });
        assert.equal(refused.status, 400, `${url}: ${refused.text}`);
        assert.match(refused.text, message, url);
      }
    } finally {
      await strict.close();
    }
  });
});

describe('webhooks: who may manage them', () => {
  it('an admin token needs webhooks:manage, given by someone who may manage webhooks', async () => {
    const app = await newApp('Webhook scopes');
    const tokenOf = async (createdBy: CredentialCreator, scopes: string[]) => {
      const clientSecret = generateClientSecret();
      const clientId = generateCredentialClientId();
      await server.tessera.store.credentials.insert({
        clientId,
        appId: app.appId,
        name: `made by ${createdBy.kind}`,
        scopes,
        expiresAt: null,
        allowFrom: [],
        secretHash: clientSecretDigest(clientSecret),
        previousSecret: null,
        createdAt: Date.now(),
        createdBy,
        lastUsedAt: null,
        accessTokenFormat: null,
      });
      server.tessera.appCache.invalidate(app.appId);
      return adminTokenOf({ ...app, clientId, clientSecret });
    };
    const list = async (token: string) => (await requestAs(`${app.appUrl}/webhooks`, bearer(token))).status;
    assert.equal(await list(await tokenOf({ kind: 'operator' }, ['events:read'])), 403, 'without the scope');
    assert.equal(await list(await tokenOf({ kind: 'operator' }, ['webhooks:manage'])), 200);
    // As an earlier release let a collaborator give it, taking it for a scope of the app's own.
    const refused = await requestAs(
      `${app.appUrl}/webhooks`,
      bearer(await tokenOf({ kind: 'developer', developerId: 'dev_collaborator' }, ['webhooks:manage'])),
    );
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.text, /was not given by someone who may manage webhooks/);
  });
});

describe('webhooks: deliveries', () => {
  it('sends each chosen event as a CloudEvent that the standardwebhooks library verifies', async () => {
    const app = await newApp('Webhook delivered');
    const to = await receiver();
    const { id } = await hook(app, to, ['app.configuration_changed']);
    await change(app);
    const other = await postAs(`${app.appUrl}/credentials`, bearer(app.admin), { name: 'not chosen', scopes: ['app:read'] });
    assert.equal(other.status, 201, other.text);
    await sendDue();
    assert.equal(to.received.length, 1, 'only the type chosen');
    const [received] = to.received;
    assert.equal(received!.refused, undefined);
    assert.equal(received!.headers['content-type'], 'application/cloudevents+json; charset=utf-8');
    assert.match(String(received!.headers['user-agent']), /^Tessera-Webhooks\//);
    const event = received!.verified as Record<string, any>;
    assert.equal(event.specversion, '1.0');
    assert.equal(event.type, 'tessera.app.configuration_changed');
    assert.equal(event.source, `/api/apps/${app.appId}`);
    assert.equal(event.subject, app.appId);
    assert.equal(received!.headers['webhook-id'], `msg_${event.id}`);
    assert.equal(event.data.details.anonymousTokenMaxLifetimeSeconds, 600);
    const events = (await requestAs(`${app.appUrl}/events?type=app.configuration_changed`, bearer(app.admin))).body.events;
    assert.deepEqual(event.data, events[0], 'the event as GET …/events describes it');
    const [delivery] = await deliveriesOf(app, id);
    assert.deepEqual(
      { state: delivery!.state, attempts: delivery!.attempts, lastStatus: delivery!.lastStatus, eventId: delivery!.eventId },
      { state: 'delivered', attempts: 1, lastStatus: 204, eventId: event.id },
    );
  });

  it('tries again on the documented schedule, with the same webhook-id, until the receiver recovers', async () => {
    const app = await newApp('Webhook retried');
    const to = await receiver();
    to.answer = (n) => (n < 2 ? { status: 500, body: 'not now' } : { status: 200, body: 'ok' });
    const { id } = await hook(app, to, ['app.configuration_changed']);
    await change(app);
    await sendDue();
    let [delivery] = await deliveriesOf(app, id);
    assert.deepEqual([delivery!.state, delivery!.attempts, delivery!.lastStatus, delivery!.lastResponse], ['pending', 1, 500, 'not now']);
    await sendDue();
    assert.equal(to.received.length, 1, 'not before its time');
    clock.advance(RETRY_DELAYS_MS[0]!);
    await sendDue();
    clock.advance(RETRY_DELAYS_MS[1]!);
    await sendDue();
    [delivery] = await deliveriesOf(app, id);
    assert.deepEqual([delivery!.state, delivery!.attempts, delivery!.lastStatus], ['delivered', 3, 200]);
    assert.equal(new Set(to.received.map((each) => each.headers['webhook-id'])).size, 1, 'one message, three attempts');
    assert.ok(to.received.every((each) => each.refused === undefined));
  });

  it('marks a delivery failed after the last retry (about three days), and sends it again by hand', async () => {
    const app = await newApp('Webhook failed');
    const to = await receiver();
    to.answer = () => ({ status: 503 });
    const { id } = await hook(app, to, ['app.configuration_changed']);
    await change(app);
    await sendDue();
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay);
      await sendDue();
    }
    const total = RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0);
    assert.ok(total > 2.9 * 86_400_000 && total < 3 * 86_400_000, `${total} ms`);
    let [delivery] = await deliveriesOf(app, id);
    assert.deepEqual([delivery!.state, delivery!.attempts, delivery!.lastStatus], ['failed', MAX_ATTEMPTS, 503]);
    assert.equal(to.received.length, MAX_ATTEMPTS);
    // Back to the present, where the receiver's library checks the timestamps of what it is sent.
    clock.offset = 0;

    to.answer = () => ({ status: 200 });
    const resent = await request(`${app.appUrl}/webhooks/${id}/deliveries/${delivery!.id}/resend`, {
      method: 'POST',
      headers: { authorization: bearer(app.admin) },
    });
    assert.equal(resent.status, 202, resent.text);
    await sendDue();
    [delivery] = await deliveriesOf(app, id);
    assert.deepEqual([delivery!.state, delivery!.attempts], ['delivered', 1]);
    const metrics = await (await fetch(server.metricsUrl!)).text();
    for (const outcome of ['delivered', 'retried', 'failed']) {
      assert.match(metrics, new RegExp(`^tessera_webhook_deliveries_total\\{outcome="${outcome}"\\} [1-9]`, 'm'), outcome);
    }
    assert.match(metrics, /^tessera_webhook_oldest_pending_seconds \d/m);
  });

  it('follows no redirect (to a metadata address or anywhere), gives up on a receiver that never answers, and blocks no request', async () => {
    const app = await newApp('Webhook redirected');
    const to = await receiver();
    to.answer = (n) =>
      n === 0 ? { status: 302, location: 'http://169.254.169.254/latest/meta-data' } : n === 1 ? 'hang' : { status: 204 };
    const { id } = await hook(app, to, ['app.configuration_changed']);
    await change(app, 601);
    await sendDue();
    let [delivery] = await deliveriesOf(app, id);
    assert.equal(delivery!.lastStatus, 302);
    assert.match(delivery!.lastError!, /redirect to http:\/\/169\.254\.169\.254\/latest\/meta-data, which is not followed/);
    assert.equal(to.received.length, 1);

    clock.advance(RETRY_DELAYS_MS[0]!);
    let sent = false;
    const sending = sendDue().then(() => (sent = true));
    await to.receivedAtLeast(2);
    await change(app, 602);
    assert.equal(sent, false, 'a change is answered while its webhook hangs');
    await sending;
    [delivery] = (await deliveriesOf(app, id)).slice(-1);
    assert.deepEqual([delivery!.state, delivery!.lastStatus, delivery!.lastError], ['pending', null, 'no answer within 2 s']);
  });

  it('during a secret rotation, signs with both secrets: a receiver with either verifies', async () => {
    const app = await newApp('Webhook rotated');
    const to = await receiver();
    const { id, secret: old } = await hook(app, to, ['app.configuration_changed']);
    const rotated = await request(`${app.appUrl}/webhooks/${id}/rotate-secret`, {
      method: 'POST',
      headers: { authorization: bearer(app.admin) },
    });
    assert.equal(rotated.status, 200, rotated.text);
    const fresh = rotated.body.secret as string;
    assert.notEqual(fresh, old);
    assert.ok(rotated.body.webhook.previousSecretUntil !== null);
    await change(app);
    await sendDue();
    const [received] = to.received;
    assert.equal(String(received!.headers['webhook-signature']).split(' ').length, 2);
    for (const secret of [old, fresh]) {
      assert.doesNotThrow(() => new Webhook(secret).verify(received!.body, received!.headers as Record<string, string>));
    }
  });

  it('keeps a bounded queue: past 1,000 waiting deliveries of a webhook, the oldest are marked failed', async () => {
    const app = await newApp('Webhook flooded');
    const to = await receiver();
    const { id } = await hook(app, to, ['app.configuration_changed']);
    const at = clock.now();
    const flood = Array.from({ length: MAX_PENDING_DELIVERIES + 5 }, (_, n) => ({
      type: 'app.configuration_changed' as const,
      appId: app.appId,
      at: at + n,
      principal: 'operator' as const,
      clientAddress: null,
      details: { n },
    }));
    await server.tessera.store.transaction((tx) => tx.events.append(flood));
    const webhooks = server.tessera.store.webhooks;
    assert.equal(await webhooks.failOverflow(MAX_PENDING_DELIVERIES, at), 5);
    const listed = await webhooks.listDeliveries(app.appId, id, undefined, MAX_PENDING_DELIVERIES + 10);
    const failed = listed.filter((delivery) => delivery.state === 'failed');
    assert.deepEqual(
      failed.map((delivery) => Number(delivery.event.details.n)).sort((a, b) => a - b),
      [0, 1, 2, 3, 4],
      'the oldest five',
    );
    assert.match(failed[0]!.lastError!, /queue full/);
    assert.equal(await webhooks.failOverflow(MAX_PENDING_DELIVERIES, at), 0);
    await server.tessera.store.webhooks.delete(app.appId, id);
  });

  it('records a burst of refused token requests once an hour, and sends it', async () => {
    const app = await newApp('Webhook burst');
    const to = await receiver();
    await hook(app, to, ['app.refusal_burst']);
    for (let n = 0; n < 12; n++) {
      const refused = await postAs(`${app.appUrl}/oauth2/token`, '', {
        grant_type: 'client_credentials',
        client_id: app.clientId,
        client_secret: 'wrong',
      });
      assert.equal(refused.status, 401);
    }
    await server.tessera.events.flush();
    clock.advance(70_000);
    await server.tessera.refusalBursts.checkEnded();
    await server.tessera.refusalBursts.checkEnded();
    await sendDue();
    const bursts = to.events().filter((event) => event.type === 'tessera.app.refusal_burst');
    assert.equal(bursts.length, 1, JSON.stringify(to.received.map((each) => each.refused)));
    assert.ok(Number(bursts[0]!.data.details.refused) >= 10);

    // Another burst in the same hour is not told again.
    for (let n = 0; n < 12; n++) {
      await postAs(`${app.appUrl}/oauth2/token`, '', { grant_type: 'client_credentials', client_id: app.clientId, client_secret: 'wrong' });
    }
    await server.tessera.events.flush();
    clock.advance(70_000);
    await server.tessera.refusalBursts.checkEnded();
    await sendDue();
    assert.equal(to.events().filter((event) => event.type === 'tessera.app.refusal_burst').length, 1);
  });
});
