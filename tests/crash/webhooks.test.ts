import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { adminTokenRequest, Children, createAppWithCli, runCli, sleep, startTessera, type CreatedApp } from '../helpers/fleet.js';
import { bearer, postAs, request, requestAs } from '../helpers/http.js';
import { REPO_ROOT, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { TEST_KEY_ENCRYPTION_KEY } from '../helpers/server.js';
import { createPostgresDatabase } from '../helpers/store.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// Webhook deliveries at least once, with real `tessera serve` processes on one PostgreSQL database:
// an instance killed (SIGKILL) while it sends, and with deliveries committed that it never sent,
// loses none of them; two instances sending the same queue send each delivery once.

const children = new Children();
process.once('exit', () => children.killAllNow());

const ENV = {
  KEY_ENCRYPTION_KEY: TEST_KEY_ENCRYPTION_KEY.toString('base64'),
  WEBHOOK_ALLOW_HTTP: '1',
  WEBHOOK_ALLOW_PRIVATE: '1',
  // A delivery an instance took is taken again 3 s later (twice this, and a second) if it never said how it went.
  WEBHOOK_TIMEOUT_SECONDS: '1',
};

let database: { databaseUrl: string; drop: () => Promise<void> };
const options = () => ({ entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: database.databaseUrl, env: ENV });
const receiver = new WebhookReceiver();

before(async () => {
  database = await createPostgresDatabase({ migrated: true });
  await receiver.start();
});
after(async () => {
  await children.killAll();
  await receiver.close();
  await database.drop();
});

async function adminOf(server: ServerProcess, app: CreatedApp): Promise<string> {
  const outcome = await adminTokenRequest(server.baseUrl, app);
  assert.equal(outcome.status, 200, outcome.text);
  return outcome.body.access_token as string;
}

/** A change on `server`: one `app.configuration_changed` event, and so one delivery. */
async function change(server: ServerProcess, app: CreatedApp, admin: string, seconds: number): Promise<void> {
  const response = await request(`${server.baseUrl}/api/apps/${app.appId}/configuration`, {
    method: 'PATCH',
    headers: { authorization: bearer(admin), 'content-type': 'application/json' },
    body: JSON.stringify({ anonymousTokenMaxLifetimeSeconds: seconds }),
  });
  assert.equal(response.status, 200, response.text);
}

async function webhookOn(server: ServerProcess, app: CreatedApp, admin: string): Promise<void> {
  const created = await postAs(`${server.baseUrl}/api/apps/${app.appId}/webhooks`, bearer(admin), {
    url: receiver.url,
    eventTypes: ['app.configuration_changed'],
  });
  assert.equal(created.status, 201, created.text);
  receiver.secrets.push(created.body.secret as string);
}

async function changeEventIds(server: ServerProcess, app: CreatedApp, admin: string): Promise<string[]> {
  const page = await requestAs(`${server.baseUrl}/api/apps/${app.appId}/events?type=app.configuration_changed&limit=100`, bearer(admin));
  return (page.body.events as { id: string }[]).map((event) => event.id).sort();
}

const received = (from: number) =>
  receiver.received.slice(from).map((each) => {
    assert.equal(each.refused, undefined, 'verified by the standardwebhooks library');
    return String(each.headers['webhook-id']);
  });

describe('webhook deliveries with instances killed and side by side (PostgreSQL)', () => {
  it('an instance killed while it sends, and before it sent what was committed, loses no delivery', async () => {
    const app = await createAppWithCli(children, options(), 'Webhooks killed');
    const first = await startTessera(children, options());
    const admin = await adminOf(first, app);
    await webhookOn(first, app, admin);
    const from = receiver.received.length;
    receiver.answer = (n) => (n === from ? 'hang' : { status: 204 });

    await change(first, app, admin, 600);
    await receiver.receivedAtLeast(from + 1);
    // Committed while the first hangs; the instance is killed before its next poll sends them.
    await change(first, app, admin, 601);
    await change(first, app, admin, 602);
    first.child.kill('SIGKILL');
    await first.exited;
    const sentBeforeTheKill = receiver.received.length - from;

    const second = await startTessera(children, options());
    const ids = await changeEventIds(second, app, admin);
    assert.equal(ids.length, 3);
    await receiver.receivedAtLeast(from + sentBeforeTheKill + 3, 15_000);
    const got = received(from);
    assert.deepEqual([...new Set(got)].sort(), ids.map((id) => `msg_${id}`).sort(), 'every event, none lost');
    assert.equal(got.filter((id) => id === got[0]).length, 2, 'the one in flight at the kill, sent again with the same webhook-id');
    second.child.kill('SIGTERM');
    await second.exited;
  });

  it('two instances sending one queue send each delivery once', async () => {
    const app = await createAppWithCli(children, options(), 'Webhooks shared');
    const [a, b] = [await startTessera(children, options()), await startTessera(children, options())];
    const admin = await adminOf(a, app);
    await webhookOn(a, app, admin);
    const from = receiver.received.length;
    receiver.answer = () => ({ status: 204 });
    const CHANGES = 30;
    await Promise.all(Array.from({ length: CHANGES }, (_, n) => change(n % 2 === 0 ? a : b, app, admin, 700 + n)));
    await receiver.receivedAtLeast(from + CHANGES, 15_000);
    // Room for a second send of any of them, had two instances taken the same delivery.
    await sleep(1_500);
    const got = received(from);
    assert.equal(got.length, CHANGES, 'each once');
    assert.deepEqual([...got].sort(), (await changeEventIds(a, app, admin)).map((id) => `msg_${id}`).sort());
  });

  it('the operator manages webhooks with tessera webhooks: create, list, rotate-secret, delete', async () => {
    const app = await createAppWithCli(children, options(), 'Webhooks of the CLI');
    const cli = (...args: string[]) => runCli(children, options(), ['webhooks', ...args]);
    const created = await cli(
      'create',
      app.appId,
      '--url',
      receiver.url,
      '--event',
      'credential.created',
      '--event',
      'app.secret_exposed',
      '--json',
    );
    assert.equal(created.code, 0, created.stderr);
    const { webhook, secret } = JSON.parse(created.stdout) as { webhook: { id: string; eventTypes: string[] }; secret: string };
    assert.match(secret, /^whsec_/);
    assert.deepEqual(webhook.eventTypes, ['app.secret_exposed', 'credential.created']);
    const listed = await cli('list', app.appId);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`${webhook.id}\n  URL          ${receiver.url.replaceAll('.', '\\.')}`));
    assert.ok(!listed.stdout.includes('whsec_'));
    const rotated = await cli('rotate-secret', app.appId, webhook.id);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /Secret {7}whsec_/);
    assert.match(rotated.stdout, /signs beside it until \d{4}-/);
    const deleted = await cli('delete', app.appId, webhook.id, '--json');
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal((JSON.parse(deleted.stdout) as { id: string }).id, webhook.id);
    // A refusal as every verb says one: on stderr, exit 1 (each verb's checks are tests/http/webhooks.test.ts's).
    const refused = await cli('delete', app.appId, webhook.id);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /no webhook of this id/);
  });
});
