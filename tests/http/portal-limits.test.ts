import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeveloperLimitSettings } from '../../src/developers/developer-limits.js';
import type { DeveloperEvent } from '../../src/developers/events.js';
import { DEFAULT_RATE_LIMITS } from '../../src/limits/rate-limits.js';
import { OPERATOR } from '../../src/request-context.js';
import { createDeveloper } from '../helpers/portal.js';
import { signInOverHttp, type PortalClient, type PortalResponse } from '../helpers/portal-http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

// What one developer may add in the portal, over plain HTTP on both stores: the apps it may own
// (a burst at the limit included), the apps it may create and the invitations it may send an hour.
// Each refusal is the form again with the reason, stores nothing, and is one account event however
// often it is repeated.

const HOUR = 3600;

const ownedApps: DeveloperLimitSettings = {
  ownedApps: 3,
  appCreations: { points: 20, duration: HOUR },
  invitations: { points: 50, duration: HOUR },
};
const perHour: DeveloperLimitSettings = {
  ownedApps: 100,
  appCreations: { points: 3, duration: HOUR },
  invitations: { points: 3, duration: HOUR },
};
const twoOwned: DeveloperLimitSettings = { ...perHour, ownedApps: 2 };

/** Apps a developer may own, here: 3, with no rate (rate limits off). */
const owning = serverForSuite({ developerLimits: ownedApps });
/** Rates of 3 an hour, with the limits on; owning up to 100. */
const rates = serverForSuite({ developerLimits: perHour, rateLimits: { ...DEFAULT_RATE_LIMITS, enabled: true } });
/** Both: owning up to 2, creating 3 an hour. */
const both = serverForSuite({ developerLimits: twoOwned, rateLimits: { ...DEFAULT_RATE_LIMITS, enabled: true } });

/** A developer made by the operator, signed in over HTTP. */
async function developerOn(server: TestServer, email: string): Promise<{ id: string; email: string; client: PortalClient }> {
  const developer = await createDeveloper(server, email);
  return { ...developer, client: await signInOverHttp(server, email) };
}

/** The new-app form, opened and sent as a browser does. */
async function createInPortal(client: PortalClient, name: string): Promise<PortalResponse> {
  const { csrf, once } = await client.page('/portal/apps/new');
  return client.post('/portal/apps', { _csrf: csrf, once: once!, name });
}

async function ownedBy(server: TestServer, developerId: string): Promise<number> {
  return (await server.tessera.members.appsOf(developerId)).filter((membership) => membership.role === 'owner').length;
}

async function limitEvents(server: TestServer, developerId: string): Promise<DeveloperEvent[]> {
  return (await server.tessera.store.developers.accounts.listEvents(developerId, 100)).filter(
    (event) => event.type === 'developer.limit_reached',
  );
}

/** The new-app form shown again with the reason: what was typed kept, a new once value, no key. */
function assertFormAgain(response: PortalResponse, name: string, reason: RegExp): void {
  assert.match(response.text, /<form method="post" action="\/portal\/apps"/);
  assert.match(response.text, new RegExp(`<p class="alert" role="alert">${reason.source}`));
  assert.match(response.text, new RegExp(`value="${name}"`));
  assert.match(response.text, /<input type="hidden" name="once" value="[A-Za-z0-9_-]{22}">/);
  assert.doesNotMatch(response.text, /data-key="clientSecret"/);
}

describe('the apps a developer may own (PORTAL_APPS_PER_DEVELOPER)', () => {
  it('refuses the next app at the limit with the form and the reason (403), stores nothing, and records the refusal once', async () => {
    const developer = await developerOn(owning, 'owner@example.com');
    // The operator's apps count, and the operator is not held by the limit.
    await owning.tessera.ownedApps.create('From the operator', developer.email, OPERATOR);
    for (const name of ['Second', 'Third']) assert.equal((await createInPortal(developer.client, name)).status, 201);
    const appsBefore = await owning.tessera.store.apps.count();

    const refused = await createInPortal(developer.client, 'Fourth');
    assert.equal(refused.status, 403);
    assertFormAgain(refused, 'Fourth', /You own 3 apps, and a developer may own 3 at most here/);
    assert.match(refused.text, /Delete an app you no longer need/);
    assert.equal(refused.headers.get('cache-control'), 'no-store');
    assert.equal(await owning.tessera.store.apps.count(), appsBefore, 'no app stored');
    assert.equal(await ownedBy(owning, developer.id), 3);
    assert.ok(!(await owning.tessera.apps.list()).some((app) => app.name === 'Fourth'));

    const [event, ...more] = await limitEvents(owning, developer.id);
    assert.deepEqual(more, []);
    assert.deepEqual(
      { actor: event?.actor, clientAddress: event?.clientAddress, details: event?.details },
      { actor: 'developer', clientAddress: '127.0.0.1', details: { limit: 'owned_apps', allowed: 3, ownedApps: 3 } },
    );

    // Trying again is refused again, and is not recorded again within the hour.
    for (let attempt = 0; attempt < 5; attempt++) assert.equal((await createInPortal(developer.client, 'Again')).status, 403);
    assert.equal((await limitEvents(owning, developer.id)).length, 1);
    assert.equal(await owning.tessera.store.apps.count(), appsBefore);

    await owning.tessera.ownedApps.create('The operator gives one more', developer.email, OPERATOR);
    assert.equal(await ownedBy(owning, developer.id), 4);
  });

  it('lets 50 simultaneous new apps of one developer near its limit pass only up to it', async () => {
    const developer = await developerOn(owning, 'burst@example.com');
    assert.equal((await createInPortal(developer.client, 'First')).status, 201);
    const forms = [];
    for (let index = 0; index < 50; index++) forms.push(await developer.client.page('/portal/apps/new'));
    const appsBefore = await owning.tessera.store.apps.count();

    const answers = await Promise.all(
      forms.map(({ csrf, once }, index) => developer.client.post('/portal/apps', { _csrf: csrf, once: once!, name: `Burst ${index}` })),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    assert.deepEqual(statuses, [...Array<number>(2).fill(201), ...Array<number>(48).fill(403)]);
    assert.equal(await ownedBy(owning, developer.id), 3);
    assert.equal(await owning.tessera.store.apps.count(), appsBefore + 2);
    assert.equal((await limitEvents(owning, developer.id)).length, 1);
  });
});

describe('the apps a developer may create an hour', () => {
  it('refuses past the rate with 429, Retry-After and the form with the reason; stores nothing; records the refusal once', async () => {
    const developer = await developerOn(rates, 'maker@example.com');
    for (const name of ['One', 'Two', 'Three']) assert.equal((await createInPortal(developer.client, name)).status, 201);
    const appsBefore = await rates.tessera.store.apps.count();

    const refused = await createInPortal(developer.client, 'Four');
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= HOUR, `Retry-After: ${refused.headers.get('retry-after')}`);
    assertFormAgain(refused, 'Four', /Too many new apps: a developer may create 3 an hour\. Try again in \d+ minutes\./);
    assert.equal((await createInPortal(developer.client, 'Five')).status, 429);
    assert.equal(await rates.tessera.store.apps.count(), appsBefore, 'no app stored');

    const events = await limitEvents(rates, developer.id);
    assert.deepEqual(
      events.map((event) => event.details),
      [{ limit: 'app_creations', allowed: 3, perSeconds: HOUR }],
    );
    // Another developer has a count of its own; the operator has none.
    const other = await developerOn(rates, 'other-maker@example.com');
    assert.equal((await createInPortal(other.client, 'Theirs')).status, 201);
    await rates.tessera.ownedApps.create('From the operator', developer.email, OPERATOR);
  });

  it('does not count an app refused for the apps owned against the rate: a developer at its limit who deletes one may create one', async () => {
    const developer = await developerOn(both, 'full@example.com');
    for (const name of ['One', 'Two']) assert.equal((await createInPortal(developer.client, name)).status, 201);
    for (let i = 0; i < 5; i++) {
      const refused = await createInPortal(developer.client, `Extra ${i}`);
      assert.equal(refused.status, 403, `try ${i}: the reason is the apps owned, never the rate`);
    }
    const [first] = await both.tessera.members.appsOf(developer.id);
    await both.tessera.apps.delete(first!.appId, OPERATOR);
    assert.equal((await createInPortal(developer.client, 'Again')).status, 201);
  });

  it('takes the count before the work: of 10 simultaneous new apps, 3 are made', async () => {
    const developer = await developerOn(rates, 'hasty@example.com');
    const forms = [];
    for (let index = 0; index < 10; index++) forms.push(await developer.client.page('/portal/apps/new'));
    const answers = await Promise.all(
      forms.map(({ csrf, once }, index) => developer.client.post('/portal/apps', { _csrf: csrf, once: once!, name: `Hasty ${index}` })),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 201, 201, 429, 429, 429, 429, 429, 429, 429]);
    assert.equal(await ownedBy(rates, developer.id), 3);
  });
});

describe('the invitations a developer may send an hour', () => {
  it('refuses past the rate with 429, Retry-After and the people page with the reason; stores no link; records the refusal once', async () => {
    const owner = await developerOn(rates, 'inviter@example.com');
    const app = await rates.tessera.ownedApps.create('Team', owner.email, OPERATOR);
    const path = `/portal/apps/${app.appId}/people`;
    const pending = async () => (await rates.tessera.members.pendingInvitations(app.appId, OPERATOR)).length;
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
      const { csrf } = await owner.client.page(path);
      assert.equal((await owner.client.post(`${path}/invitations`, { _csrf: csrf, email })).status, 200);
    }

    const { csrf } = await owner.client.page(path);
    const refused = await owner.client.post(`${path}/invitations`, { _csrf: csrf, email: 'd@example.com' });
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= HOUR, `Retry-After: ${refused.headers.get('retry-after')}`);
    assert.match(
      refused.text,
      /<p class="alert" role="alert">Too many invitations: a developer may send 3 an hour\. Try again in \d+ minutes; the links handed out already still work\./,
    );
    assert.match(
      refused.text,
      /value="d@example.com" aria-describedby="invite-hint" autofocus>/,
      'the field, and its message above it, in view below a long list',
    );
    assert.doesNotMatch(refused.text, /accept-invitation\?token=/);
    assert.equal((await owner.client.post(`${path}/invitations`, { _csrf: csrf, email: 'e@example.com' })).status, 429);
    assert.equal(await pending(), 3, 'no link stored');

    const events = await limitEvents(rates, owner.id);
    assert.deepEqual(
      events.map((event) => event.details),
      [{ limit: 'invitations', appId: app.appId, allowed: 3, perSeconds: HOUR }],
    );
    // The operator invites all the same.
    await rates.tessera.members.invite(app.appId, 'd@example.com', OPERATOR);
    assert.equal(await pending(), 4);
  });
});
