import assert from 'node:assert/strict';
import { DEFAULT_APP_CONFIGURATION } from 'tessera-tokens/internal/apps/app.js';
import { beforeEach, describe, it } from 'node:test';
import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import type { CreatedApp } from '../../src/apps/service.js';
import { OPERATOR } from '../../src/request-context.js';
import { adminFields, adminTokenOf, requestToken, tokenWorks, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, createSharedApp } from '../helpers/portal.js';
import { signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { serverForSuite } from '../helpers/server.js';

// An app's forms in the portal over plain HTTP, on both stores: rotating the ClientSecret, the
// settings, revoking tokens, deleting the app. Who may post each one (the owner; a collaborator all
// but rotating and deleting; another developer none: 404), and that a form without its own
// session's form token changes nothing.

let owner: PortalClient;
let ownerElsewhere: PortalClient;
let collaborator: PortalClient;
let other: PortalClient;
const developerIds: Record<string, string> = {};

const server = serverForSuite({}, async () => {
  for (const name of ['owner', 'collaborator', 'other']) developerIds[name] = (await createDeveloper(server, `${name}@example.com`)).id;
  owner = await signInOverHttp(server, 'owner@example.com');
  ownerElsewhere = await signInOverHttp(server, 'owner@example.com');
  collaborator = await signInOverHttp(server, 'collaborator@example.com');
  other = await signInOverHttp(server, 'other@example.com');
});

/** A new app of owner@example.com, with collaborator@example.com invited and accepted. */
const newApp = (name = 'Shop') => createSharedApp(server, name, 'owner@example.com', 'collaborator@example.com');

/** What the app is now, and whether it still exists. */
async function stateOf(appId: string): Promise<AppDescription | 'deleted'> {
  return server.tessera.apps.show(appId, OPERATOR).catch(() => 'deleted' as const);
}

/** A form of each kind, filled in as its owner would (the right ClientID, the right name). */
function everyForm(app: CreatedApp): [string, Record<string, string>][] {
  const base = `/portal/apps/${app.appId}`;
  return [
    [`${base}/rotate-secret`, { grace: 'none', clientId: app.clientId, revokeAdminTokens: 'yes' }],
    [
      `${base}/settings`,
      {
        adminMax: '1',
        adminMaxUnit: 'hour',
        anonymousMax: '',
        anonymousMaxUnit: 'hour',
        requireAppKey: 'yes',
        allowedOrigins: 'https://evil.example',
      },
    ],
    [`${base}/revoke-tokens`, { kind: 'all', confirm: 'yes' }],
    [`${base}/delete`, { name: app.name }],
  ];
}

async function secretWorks(app: AppEndpoint, clientSecret: string): Promise<boolean> {
  const target = { ...app, clientSecret };
  return (await requestToken(target, adminFields(target))).status === 200;
}

describe("an app's forms in the portal", () => {
  let app: CreatedApp & AppEndpoint;
  beforeEach(async () => {
    app = await newApp();
  });

  it('change nothing when posted without a form token, or with the token of another session (403)', async () => {
    const adminToken = await adminTokenOf(app);
    const before = await stateOf(app.appId);
    const theirs = (await ownerElsewhere.page('/portal/')).csrf;
    const anotherDevelopers = (await other.page('/portal/')).csrf;
    for (const [path, fields] of everyForm(app)) {
      for (const [what, csrf] of [
        ['no token', undefined],
        ["the owner's other session's token", theirs],
        ["another developer's token", anotherDevelopers],
        ['a made-up token', 'x'.repeat(40)],
      ] as const) {
        const response = await owner.post(path, csrf === undefined ? fields : { ...fields, _csrf: csrf });
        assert.equal(response.status, 403, `${path} with ${what}: ${response.status}`);
        assert.doesNotMatch(response.text, /data-key="clientSecret"/);
      }
    }
    assert.deepEqual(await stateOf(app.appId), before);
    assert.ok(await secretWorks(app, app.clientSecret), 'the ClientSecret is the same');
    assert.ok(await tokenWorks(app.appUrl, adminToken), 'no token was revoked');
  });

  it('answer another developer 404 for every page and form of the app, and change nothing', async () => {
    const adminToken = await adminTokenOf(app);
    const before = await stateOf(app.appId);
    const base = `/portal/apps/${app.appId}`;
    for (const path of [base, `${base}/settings`, `${base}/rotate-secret`]) {
      const response = await other.send(path);
      assert.equal(response.status, 404, `GET ${path}`);
      assert.ok(!response.text.includes(app.appKey) && !response.text.includes(app.clientId), `GET ${path} shows nothing of the app`);
    }
    const csrf = (await other.page('/portal/')).csrf;
    for (const [path, fields] of everyForm(app)) {
      const response = await other.post(path, { ...fields, _csrf: csrf });
      assert.equal(response.status, 404, `POST ${path}: ${response.status}`);
      assert.ok(!response.text.includes(app.clientId), `POST ${path} shows nothing of the app`);
    }
    assert.deepEqual(await stateOf(app.appId), before);
    assert.ok(await secretWorks(app, app.clientSecret));
    assert.ok(await tokenWorks(app.appUrl, adminToken));
    // An app that does not exist answers the same.
    const missing = await other.post('/portal/apps/0000000000000000/settings', { ...everyForm(app)[1]![1], _csrf: csrf });
    assert.equal(missing.status, 404);
  });

  it('let a collaborator change the settings and revoke tokens, but not rotate the secret or delete the app (403)', async () => {
    const base = `/portal/apps/${app.appId}`;
    const overview = await collaborator.page(base);
    assert.doesNotMatch(overview.text, /Rotate ClientSecret/);
    const settings = await collaborator.page(`${base}/settings`);
    assert.doesNotMatch(settings.text, /Delete app/);
    assert.equal((await collaborator.send(`${base}/rotate-secret`)).status, 403);
    const before = await stateOf(app.appId);
    for (const path of [`${base}/rotate-secret`, `${base}/delete`]) {
      const fields = everyForm(app).find(([formPath]) => formPath === path)![1];
      const response = await collaborator.post(path, { ...fields, _csrf: settings.csrf });
      assert.equal(response.status, 403, path);
      assert.doesNotMatch(response.text, /data-key="clientSecret"/);
    }
    assert.deepEqual(await stateOf(app.appId), before);
    assert.ok(await secretWorks(app, app.clientSecret));

    const saved = await collaborator.post(`${base}/settings`, { ...everyForm(app)[1]![1], _csrf: settings.csrf });
    assert.equal(saved.status, 303);
    const after = await server.tessera.apps.show(app.appId, OPERATOR);
    assert.deepEqual(after.configuration.allowedOrigins, ['https://evil.example']);
    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(app.appId, { type: 'app.configuration_changed', limit: 10 });
    assert.equal(events[0]?.principal, 'developer');
  });
});

describe('a new app in the portal', () => {
  it('is created once per form: the same form sent again (a reload of the answer) is 409 and creates nothing', async () => {
    const appsOfOwner = async () => (await server.tessera.members.appsOf(developerIds.owner!)).length;
    const before = await appsOfOwner();
    const { csrf, once } = await owner.page('/portal/apps/new');
    const fields = { _csrf: csrf, once: once!, name: 'Sent twice' };
    const first = await owner.post('/portal/apps', fields);
    assert.equal(first.status, 201, first.text.slice(0, 300));
    assert.match(first.text, /data-key="clientSecret"/);
    const again = await owner.post('/portal/apps', fields);
    assert.equal(again.status, 409);
    assert.doesNotMatch(again.text, /data-key="clientSecret"/);
    assert.equal(await appsOfOwner(), before + 1);
  });

  it('is created once when the same form is sent twice at the same time (a resend while the first is pending)', async () => {
    const appsOfOwner = async () => (await server.tessera.members.appsOf(developerIds.owner!)).length;
    const before = await appsOfOwner();
    const { csrf, once } = await owner.page('/portal/apps/new');
    const fields = { _csrf: csrf, once: once!, name: 'Sent together' };
    const answers = await Promise.all([
      owner.post('/portal/apps', fields),
      owner.post('/portal/apps', fields),
      owner.post('/portal/apps', fields),
    ]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409, 409]);
    assert.equal(await appsOfOwner(), before + 1);
  });
});

describe('the settings page', () => {
  it('keeps what cannot be undone (revoking tokens, deleting the app) in a danger zone of its own, after the routine settings', async () => {
    const app = await newApp();
    const { text } = await owner.page(`/portal/apps/${app.appId}/settings`);
    const zone = text.indexOf('<section class="danger-zone" aria-labelledby="danger-zone">');
    assert.ok(zone > text.indexOf('Save settings'), 'the danger zone comes after the routine settings');
    const inZone = text.slice(zone);
    assert.match(inZone, /<h2 id="danger-zone">Danger zone<\/h2>/);
    for (const action of ['/revoke-tokens"', '/delete"']) assert.ok(inZone.includes(action), action);
    assert.ok(!text.slice(0, zone).includes('class="danger"'), 'no dangerous button among the routine settings');
  });
});

describe('rotating the ClientSecret in the portal', () => {
  it('offers a grace period first: an hour is chosen, stopping at once is a choice to make', async () => {
    const app = await newApp();
    const form = await owner.page(`/portal/apps/${app.appId}/rotate-secret`);
    assert.match(form.text, /<input type="radio" id="grace-3600" name="grace" value="3600" checked>/);
    assert.doesNotMatch(form.text, /id="grace-none"[^>]* checked/);
  });

  it('rotates once when the same form is sent twice at the same time: the grace period chosen holds', async () => {
    const app = await newApp();
    const path = `/portal/apps/${app.appId}/rotate-secret`;
    const { csrf, once } = await owner.page(path);
    const fields = { _csrf: csrf, once: once!, grace: '86400', clientId: app.clientId };
    const answers = await Promise.all([owner.post(path, fields), owner.post(path, fields)]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 409]);
    const rotated = answers.find((answer) => answer.status === 200)!;
    const refused = answers.find((answer) => answer.status === 409)!;
    assert.doesNotMatch(refused.text, /data-key="clientSecret"/);
    assert.match(refused.text, /sent already/);
    const newSecret = /data-key="clientSecret">(tessera_[0-9A-Za-z]{49})</.exec(rotated.text)?.[1];
    assert.ok(newSecret !== undefined);
    assert.ok(await secretWorks(app, newSecret));
    assert.ok(await secretWorks(app, app.clientSecret), 'the secret in production keeps its day');
    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(app.appId, { type: 'app.secret_rotated', limit: 10 });
    assert.equal(events.length, 1);
    // A new form (the back button, a new visit) says what another rotation would end.
    const again = await owner.page(path);
    assert.match(
      again.text,
      /<section id="end-previous-secret"[^>]* data-previous-secret-valid-until="[^"]+">\n<h3 id="end-previous-secret-heading">End the grace period now<\/h3>\n<p>The ClientSecret before the current one still works, until <time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/time>, kept by the last rotation\./,
    );
    assert.match(again.text, /<p class="alert">Rotating again also makes the previous ClientSecret stop at once/);
  });

  it('needs the ClientID typed: a wrong one is 400 with a message and rotates nothing', async () => {
    const app = await newApp();
    const form = await owner.page(`/portal/apps/${app.appId}/rotate-secret`);
    const response = await owner.post(`/portal/apps/${app.appId}/rotate-secret`, {
      _csrf: form.csrf,
      once: form.once!,
      grace: 'none',
      clientId: app.appId,
    });
    assert.equal(response.status, 400);
    assert.match(response.text, /role="alert">That is not the ClientID of this app/);
    assert.doesNotMatch(response.text, /data-key="clientSecret"/);
    assert.ok(await secretWorks(app, app.clientSecret));
  });

  it('refuses a grace period with "revoke admin tokens", and grace periods out of bounds, saying why', async () => {
    const app = await newApp();
    const path = `/portal/apps/${app.appId}/rotate-secret`;
    for (const [fields, message] of [
      [{ grace: '3600', revokeAdminTokens: 'yes' }, /do not go together/],
      [{ grace: 'custom', graceSeconds: '0' }, /from 1 to 2592000/],
      [{ grace: 'custom', graceSeconds: '2592001' }, /from 1 to 2592000/],
      [{ grace: 'custom', graceSeconds: '1e3' }, /whole number of seconds/],
      [{ grace: 'custom', graceSeconds: '' }, /whole number of seconds/],
      [{ grace: 'none', graceSeconds: '60' }, /choose &quot;For another period&quot;/],
      [{ grace: '12' }, /Choose how long/],
    ] as const) {
      const { csrf, once } = await owner.page(path);
      const response = await owner.post(path, { _csrf: csrf, once: once!, clientId: app.clientId, ...fields });
      assert.equal(response.status, 400, JSON.stringify(fields));
      assert.match(response.text, message, JSON.stringify(fields));
    }
    assert.ok(await secretWorks(app, app.clientSecret));
  });

  it('shows the new secret once (200, no-store), ends the old one, and records the developer who did it', async () => {
    const app = await newApp();
    const adminToken = await adminTokenOf(app);
    const { csrf, once } = await owner.page(`/portal/apps/${app.appId}/rotate-secret`);
    const response = await owner.post(`/portal/apps/${app.appId}/rotate-secret`, {
      _csrf: csrf,
      once: once!,
      grace: 'none',
      clientId: ` ${app.clientId} `,
      revokeAdminTokens: 'yes',
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const newSecret = /data-key="clientSecret">(tessera_[0-9A-Za-z]{49})</.exec(response.text)?.[1];
    assert.ok(newSecret !== undefined && newSecret !== app.clientSecret);
    assert.match(response.text, /Admin tokens revoked: 1\./);
    assert.ok(!(await secretWorks(app, app.clientSecret)));
    assert.ok(await secretWorks(app, newSecret));
    assert.ok(!(await tokenWorks(app.appUrl, adminToken)));
    const overview = await owner.page(`/portal/apps/${app.appId}`);
    assert.ok(!overview.text.includes(newSecret), 'never shown again');

    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(app.appId, { limit: 10 });
    const rotated = events.find((event) => event.type === 'app.secret_rotated');
    assert.equal(rotated?.principal, 'developer');
    assert.equal(rotated?.details.byDeveloperId, developerIds.owner);
    const revoked = events.find((event) => event.type === 'token.revoked');
    assert.equal(revoked?.details.byDeveloperId, developerIds.owner);
    assert.ok(!JSON.stringify(events).includes(newSecret), 'no secret in the events');
  });

  it('is done once per form: the same form sent again (a reload of the answer) is 409 and rotates nothing', async () => {
    const app = await newApp();
    const path = `/portal/apps/${app.appId}/rotate-secret`;
    const { csrf, once } = await owner.page(path);
    const fields = { _csrf: csrf, once: once!, grace: '3600', clientId: app.clientId };
    const first = await owner.post(path, fields);
    assert.equal(first.status, 200);
    const secret = /data-key="clientSecret">(tessera_[0-9A-Za-z]{49})</.exec(first.text)![1]!;
    const again = await owner.post(path, fields);
    assert.equal(again.status, 409);
    assert.match(again.text, /This form was sent already/);
    assert.ok(await secretWorks(app, secret), 'the secret the first answer showed still works');
    assert.ok(await secretWorks(app, app.clientSecret), 'and its grace period still runs');
    assert.equal((await owner.post(path, { _csrf: csrf, grace: '3600', clientId: app.clientId })).status, 409, 'without its once field');
  });

  it('keeps the old secret working for the grace period chosen, which the overview shows', async () => {
    const app = await newApp();
    const { csrf, once } = await owner.page(`/portal/apps/${app.appId}/rotate-secret`);
    const response = await owner.post(`/portal/apps/${app.appId}/rotate-secret`, {
      _csrf: csrf,
      once: once!,
      grace: '86400',
      clientId: app.clientId,
    });
    assert.equal(response.status, 200);
    const newSecret = /data-key="clientSecret">(tessera_[0-9A-Za-z]{49})</.exec(response.text)![1]!;
    assert.match(response.text, /The previous ClientSecret keeps working until <time/);
    assert.ok(await secretWorks(app, app.clientSecret));
    assert.ok(await secretWorks(app, newSecret));
    const { previousSecretValidUntil } = await server.tessera.apps.show(app.appId, OPERATOR);
    assert.ok(previousSecretValidUntil !== null);
    const overview = await owner.page(`/portal/apps/${app.appId}`);
    assert.match(overview.text, new RegExp(`data-previous-secret-valid-until="${previousSecretValidUntil}"`));
  });

  it('gives the end of the grace period to the second, in the answer and on the overview', async () => {
    const app = await newApp();
    const { csrf, once } = await owner.page(`/portal/apps/${app.appId}/rotate-secret`);
    const response = await owner.post(`/portal/apps/${app.appId}/rotate-secret`, {
      _csrf: csrf,
      once: once!,
      grace: 'custom',
      graceSeconds: '90',
      clientId: app.clientId,
    });
    assert.equal(response.status, 200, response.text);
    const { previousSecretValidUntil } = await server.tessera.apps.show(app.appId, OPERATOR);
    const until = `<time datetime="${previousSecretValidUntil}">${previousSecretValidUntil!.slice(0, 10)} ${previousSecretValidUntil!.slice(11, 19)} UTC</time>`;
    assert.ok(
      response.text.includes(`The previous ClientSecret keeps working until ${until}.`),
      /keeps working until [^.]*/.exec(response.text)?.[0],
    );
    const overview = await owner.page(`/portal/apps/${app.appId}`);
    assert.ok(
      overview.text.includes(`The previous ClientSecret still works, until ${until}.`),
      /still works, until [^.]*/.exec(overview.text)?.[0],
    );
  });
});

describe("an app's settings in the portal", () => {
  it('are saved through the form, lifetimes in any unit, origins one a line', async () => {
    const app = await newApp();
    const settings = await owner.page(`/portal/apps/${app.appId}/settings`);
    const response = await owner.post(`/portal/apps/${app.appId}/settings`, {
      _csrf: settings.csrf,
      adminMax: '2',
      adminMaxUnit: 'hour',
      anonymousMax: '7',
      anonymousMaxUnit: 'day',
      requireAppKey: 'yes',
      allowedOrigins: 'https://App.example.com/\r\n\r\n  http://localhost:3000 \r\nhttps://app.example.com',
    });
    assert.equal(response.status, 303);
    assert.equal(response.location, `/portal/apps/${app.appId}/settings?done=saved`);
    const { configuration } = await server.tessera.apps.show(app.appId, OPERATOR);
    assert.deepEqual(configuration, {
      ...DEFAULT_APP_CONFIGURATION,
      adminTokenMaxLifetimeSeconds: 7200,
      anonymousTokenMaxLifetimeSeconds: 604800,
      requireAppKey: true,
      allowedOrigins: ['https://app.example.com', 'http://localhost:3000'],
    });
    const shown = await owner.page(`/portal/apps/${app.appId}/settings?done=saved`);
    assert.match(shown.text, /role="status">The settings are saved/);
    assert.match(shown.text, /id="admin-max"[^>]*value="2"/);
    assert.match(shown.text, /<option value="day" selected>/);
    for (const done of ['constructor', 'toString', '__proto__', 'nothing']) {
      assert.doesNotMatch((await owner.page(`/portal/apps/${app.appId}/settings?done=${done}`)).text, /role="status"/, done);
    }

    // The longest list there can be fits in the form.
    const longest = Array.from(
      { length: 100 },
      (_, index) => `https://${`${'a'.repeat(60)}.`.repeat(4)}${'b'.repeat(30)}${String(index).padStart(3, '0')}.example`,
    );
    const full = await owner.post(`/portal/apps/${app.appId}/settings`, {
      _csrf: settings.csrf,
      adminMax: '',
      adminMaxUnit: 'hour',
      anonymousMax: '',
      anonymousMaxUnit: 'hour',
      allowedOrigins: longest.join('\r\n'),
    });
    assert.equal(full.status, 303, full.text.slice(0, 500));
    assert.equal((await server.tessera.apps.show(app.appId, OPERATOR)).configuration.allowedOrigins.length, 100);

    const cleared = await owner.post(`/portal/apps/${app.appId}/settings`, {
      _csrf: settings.csrf,
      adminMax: '',
      adminMaxUnit: 'hour',
      anonymousMax: '',
      anonymousMaxUnit: 'hour',
      allowedOrigins: '',
    });
    assert.equal(cleared.status, 303);
    assert.deepEqual((await server.tessera.apps.show(app.appId, OPERATOR)).configuration, {
      ...DEFAULT_APP_CONFIGURATION,
      adminTokenMaxLifetimeSeconds: null,
      anonymousTokenMaxLifetimeSeconds: null,
      requireAppKey: false,
      allowedOrigins: [],
    });
  });

  it('choose the token format and the audiences of a JWT', async () => {
    const app = await newApp();
    const settings = await owner.page(`/portal/apps/${app.appId}/settings`);
    assert.match(settings.text, /id="token-format-opaque"[^>]*checked/);
    const fields = {
      _csrf: settings.csrf,
      adminMax: '',
      adminMaxUnit: 'hour',
      anonymousMax: '',
      anonymousMaxUnit: 'hour',
      allowedOrigins: '',
    };
    const saved = await owner.post(`/portal/apps/${app.appId}/settings`, {
      ...fields,
      accessTokenFormat: 'jwt',
      accessTokenAudience: ' https://api.example.com \r\n\r\norders',
    });
    assert.equal(saved.status, 303, saved.text.slice(0, 500));
    const { configuration } = await server.tessera.apps.show(app.appId, OPERATOR);
    assert.equal(configuration.accessTokenFormat, 'jwt');
    assert.deepEqual(configuration.accessTokenAudience, ['https://api.example.com', 'orders']);
    const shown = await owner.page(`/portal/apps/${app.appId}/settings?done=saved`);
    assert.match(shown.text, /id="token-format-jwt"[^>]*checked/);
    assert.match(shown.text, /https:\/\/api\.example\.com\norders<\/textarea>/);
    const refused = await owner.post(`/portal/apps/${app.appId}/settings`, {
      ...fields,
      accessTokenFormat: 'jwt',
      accessTokenAudience: 'has space',
    });
    assert.equal(refused.status, 400);
    assert.match(refused.text, /accessTokenAudience must be/);
    assert.match(refused.text, /has space<\/textarea>/, 'what was typed is kept');
    const back = await owner.post(`/portal/apps/${app.appId}/settings`, { ...fields, accessTokenFormat: 'opaque' });
    assert.equal(back.status, 303);
    assert.equal((await server.tessera.apps.show(app.appId, OPERATOR)).configuration.accessTokenFormat, 'opaque');
    assert.equal((await server.tessera.apps.show(app.appId, OPERATOR)).configuration.accessTokenAudience, null);
  });

  it('show the mistake in the form (400), keep what was typed, and change nothing', async () => {
    const app = await newApp();
    const { csrf } = await owner.page(`/portal/apps/${app.appId}/settings`);
    const valid = { _csrf: csrf, adminMax: '1', adminMaxUnit: 'hour', anonymousMax: '', anonymousMaxUnit: 'hour', allowedOrigins: '' };
    for (const [fields, message] of [
      [
        { allowedOrigins: 'https://ok.example\n\nhttps://app.example.com/path' },
        /Line 3 \(&quot;https:\/\/app\.example\.com\/path&quot;\) is not an origin/,
      ],
      [{ allowedOrigins: 'x'.repeat(40_000) }, /too long/],
      [{ allowedOrigins: Array.from({ length: 101 }, (_, index) => `https://a${index}.example`).join('\n') }, /at most 100 origins/],
      [{ adminMax: '-1' }, /longest lifetime of an admin token must be a whole number/],
      [{ adminMax: '0' }, /longest lifetime of an admin token must be a whole number/],
      [{ anonymousMax: '99999', anonymousMaxUnit: 'day' }, /longest lifetime of an anonymous token must be a whole number/],
      [{ adminMaxUnit: 'fortnight' }, /longest lifetime of an admin token must be a whole number/],
    ] as const) {
      const response = await owner.post(`/portal/apps/${app.appId}/settings`, { ...valid, ...fields });
      assert.equal(response.status, 400, JSON.stringify(fields).slice(0, 100));
      assert.match(response.text, message);
      if ('allowedOrigins' in fields && fields.allowedOrigins.length < 100)
        assert.ok(response.text.includes('https://app.example.com/path'), 'what was typed is kept');
    }
    assert.deepEqual((await server.tessera.apps.show(app.appId, OPERATOR)).configuration.allowedOrigins, []);
    assert.equal((await server.tessera.apps.show(app.appId, OPERATOR)).configuration.adminTokenMaxLifetimeSeconds, null);
  });

  it('revoke all tokens of a kind once confirmed', async () => {
    const app = await newApp();
    const adminToken = await adminTokenOf(app);
    const { csrf } = await owner.page(`/portal/apps/${app.appId}/settings`);
    for (const fields of [{ kind: 'admin' }, { confirm: 'yes' }, { kind: 'everything', confirm: 'yes' }] as Record<string, string>[]) {
      const refused = await owner.post(`/portal/apps/${app.appId}/revoke-tokens`, { _csrf: csrf, ...fields });
      assert.equal(refused.status, 400, JSON.stringify(fields));
      assert.match(refused.text, /role="alert"/);
    }
    assert.ok(await tokenWorks(app.appUrl, adminToken));
    const response = await owner.post(`/portal/apps/${app.appId}/revoke-tokens`, { _csrf: csrf, kind: 'admin', confirm: 'yes' });
    assert.equal(response.status, 303);
    assert.equal(response.location, `/portal/apps/${app.appId}/settings?done=revoked-admin`);
    assert.ok(!(await tokenWorks(app.appUrl, adminToken)));
    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(app.appId, { type: 'token.revoked', limit: 10 });
    assert.equal(events[0]?.principal, 'developer');
  });

  it('say what a revoke-all did: every anonymous token issued until then is refused, new ones work', async () => {
    const app = await newApp();
    const { csrf } = await owner.page(`/portal/apps/${app.appId}/settings`);
    for (const [kind, said] of [
      [
        'admin',
        'Every admin token of the app is revoked: each one is refused from now on. Server code gets a new one with the ClientSecret.',
      ],
      [
        'anonymous',
        'Every anonymous token of the app issued until now is refused from now on. Clients get a new one with the AppID (and the AppKey, if the app requires it).',
      ],
      [
        'all',
        'Every admin token, and every anonymous token issued until now, is refused from now on. Clients get new tokens with the app&#39;s keys.',
      ],
    ] as const) {
      const response = await owner.post(`/portal/apps/${app.appId}/revoke-tokens`, { _csrf: csrf, kind, confirm: 'yes' });
      assert.equal(response.status, 303, kind);
      const done = await owner.page(response.location!);
      assert.ok(
        done.text.includes(`<p class="notice success" role="status">${said}</p>`),
        `${kind}: ${/role="status">[^<]*/.exec(done.text)?.[0]}`,
      );
    }
  });

  it('delete the app once its name is typed, then go back to the apps', async () => {
    const app = await newApp('My shop');
    const { csrf } = await owner.page(`/portal/apps/${app.appId}/settings`);
    const wrong = await owner.post(`/portal/apps/${app.appId}/delete`, { _csrf: csrf, name: 'my shop' });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /That is not the name of this app/);
    assert.notEqual(await stateOf(app.appId), 'deleted');
    const response = await owner.post(`/portal/apps/${app.appId}/delete`, { _csrf: csrf, name: 'My shop' });
    assert.equal(response.status, 303);
    assert.equal(response.location, '/portal/?done=deleted');
    assert.equal(await stateOf(app.appId), 'deleted');
    assert.equal((await owner.send(`/portal/apps/${app.appId}`)).status, 404);
    const apps = await owner.page(response.location);
    assert.ok(!apps.text.includes(app.appId));
    assert.match(apps.text, /role="status">The app is deleted/);
    assert.ok(!(await secretWorks(app, app.clientSecret)));
  });

  it('leave a record of the deletion in the account log of each member, naming the developer who deleted it', async () => {
    const app = await newApp('Closed shop');
    const { csrf } = await owner.page(`/portal/apps/${app.appId}/settings`);
    const eventsOf = async (name: string) =>
      (await server.tessera.store.developers.accounts.listEvents(developerIds[name]!, 100)).filter(
        (event) => event.details.appId === app.appId,
      );
    assert.equal((await owner.post(`/portal/apps/${app.appId}/delete`, { _csrf: csrf, name: 'Closed shop' })).status, 303);

    const [deleted] = await eventsOf('owner');
    assert.equal(deleted?.type, 'developer.app_deleted');
    assert.equal(deleted.actor, 'developer');
    assert.equal(typeof deleted.clientAddress, 'string');
    assert.deepEqual(deleted.details, { appId: app.appId, name: 'Closed shop', role: 'owner', byDeveloperId: developerIds.owner });
    const told = await eventsOf('collaborator');
    assert.deepEqual(
      told.map((event) => [event.type, event.actor, event.details]),
      [
        [
          'developer.app_deleted',
          'developer',
          { appId: app.appId, name: 'Closed shop', role: 'collaborator', byDeveloperId: developerIds.owner },
        ],
      ],
    );
    assert.deepEqual(await eventsOf('other'), [], 'no member, no event');
  });
});
