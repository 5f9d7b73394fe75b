import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_SECRET_GRACE_SECONDS } from '../../src/apps/secret-rotation.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertError } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import { adminFields, bearer, request, requestAs, requestToken, whoami, type AppEndpoint } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';

// Rotating a ClientSecret with a grace period (`tessera apps rotate-secret --grace SECONDS`), over
// HTTP with the server's clock in the test's hands: the previous secret works until the end of the
// period and not one millisecond longer, events say which secret each admin token was issued with,
// and GET /api/apps/{appId} says until when the previous one works.

const clock = new FakeClock();

const server = serverForSuite({ clock });

const withSecret = (app: AppEndpoint, clientSecret: string): AppEndpoint => ({ ...app, clientSecret });

async function tokenWith(app: AppEndpoint, clientSecret: string) {
  return requestToken(withSecret(app, clientSecret), adminFields(withSecret(app, clientSecret)));
}

/** The app's `token.issued` events for admin tokens (oldest first) and its latest `app.secret_rotated`. */
async function eventsOf(app: AppEndpoint, adminToken: string) {
  await server.tessera.events.flush();
  const response = await requestAs(`${app.appUrl}/events?limit=500`, bearer(adminToken));
  assert.equal(response.status, 200, response.text);
  const events = (response.body.events as { type: string; principal: string; details: Record<string, unknown> }[]).reverse();
  return {
    issued: events.filter((event) => event.type === 'token.issued' && event.principal === 'admin').map((event) => event.details),
    rotated: events.filter((event) => event.type === 'app.secret_rotated').map((event) => event.details),
    refused: events.filter((event) => event.type === 'token.refused').map((event) => event.details),
  };
}

describe('a ClientSecret rotated with a grace period', () => {
  it('the previous secret works until the end of the period, and not one millisecond longer; the new one at once', async () => {
    const app = await createConfiguredApp(server, {}, 'Rotated with grace');
    const oldSecret = app.clientSecret;
    const rotatedAt = clock.now();
    const rotated = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 3600 }, OPERATOR);
    const validUntil = rotatedAt + 3_600_000;
    assert.equal(rotated.previousSecretValidUntil, new Date(validUntil).toISOString());
    assert.equal(rotated.endedEarlierSecretValidUntil, null);

    for (const secret of [oldSecret, rotated.clientSecret]) {
      const response = await tokenWith(app, secret);
      assert.equal(response.status, 200, response.text);
      const who = await whoami(app.appUrl, bearer(response.body.access_token));
      assert.equal(who.body.principal, 'admin', who.text);
    }
    clock.time = validUntil - 1;
    assert.equal((await tokenWith(app, oldSecret)).status, 200);
    clock.time = validUntil;
    const refused = await tokenWith(app, oldSecret);
    assertError(refused, 401, 'invalid_client');
    assert.ok(!refused.text.includes(oldSecret) && !refused.text.includes(rotated.clientSecret));
    assert.equal((await tokenWith(app, rotated.clientSecret)).status, 200);
    // What the old secret issued during the period stands on its own, like any admin token.
    clock.time = rotatedAt;
  });

  it('GET /api/apps/{appId} says until when the previous secret works, and never shows a secret', async () => {
    const app = await createConfiguredApp(server, {}, 'Described');
    const token = (await tokenWith(app, app.clientSecret)).body.access_token as string;
    const before = await requestAs(app.appUrl, bearer(token));
    assert.equal(before.status, 200, before.text);
    assert.equal(before.body.previousSecretValidUntil, null);

    const rotated = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 90 }, OPERATOR);
    const described = await requestAs(app.appUrl, bearer(token));
    assert.equal(described.body.previousSecretValidUntil, new Date(clock.now() + 90_000).toISOString());
    assert.equal(described.body.previousSecretValidUntil, rotated.previousSecretValidUntil);
    for (const secret of [app.clientSecret, rotated.clientSecret]) assert.ok(!described.text.includes(secret));

    await server.tessera.apps.rotateSecret(app.appId, {}, OPERATOR);
    const after = await requestAs(app.appUrl, bearer(token));
    assert.equal(after.body.previousSecretValidUntil, null);
  });

  it('token.issued of each admin token says which secret it was issued with; app.secret_rotated records the end', async () => {
    const app = await createConfiguredApp(server, {}, 'Which secret');
    const rotated = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 600 }, OPERATOR);
    const viaPrevious = await tokenWith(app, app.clientSecret);
    const viaCurrent = await tokenWith(app, rotated.clientSecret);
    const viaPreviousExpiring = await requestToken(
      withSecret(app, app.clientSecret),
      adminFields(app, { expiresAt: clock.now() + 60_000 }),
    );
    // The deployed SDKs' path goes through the same check.
    const viaSdkPath = await request(`${server.baseUrl}/api/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.kii.OauthTokenRequest+json', 'x-kii-appid': app.appId, 'x-kii-appkey': app.appKey },
      body: JSON.stringify({ client_id: app.clientId, client_secret: app.clientSecret }),
    });
    for (const response of [viaPrevious, viaCurrent, viaPreviousExpiring, viaSdkPath]) assert.equal(response.status, 200, response.text);
    clock.advance(600_000);
    assertError(await tokenWith(app, app.clientSecret), 401, 'invalid_client');

    const { issued, rotated: rotations, refused } = await eventsOf(app, viaCurrent.body.access_token);
    assert.deepEqual(issued, [
      { expiresAt: null, secret: 'previous' },
      { expiresAt: null, secret: 'current' },
      { expiresAt: clock.now() - 600_000 + 60_000, secret: 'previous' },
      { expiresAt: null, secret: 'previous' },
    ]);
    assert.deepEqual(rotations, [{ adminTokensRevoked: 0, previousSecretValidUntil: clock.now() }]);
    assert.deepEqual(refused, [{ reason: 'invalid_client' }]);
  });

  it('a second rotation replaces the previous secret: the one before it stops at once', async () => {
    const app = await createConfiguredApp(server, {}, 'Rotated twice');
    const first = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 3600 }, OPERATOR);
    clock.advance(1000);
    const second = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 60 }, OPERATOR);
    assert.equal(second.endedEarlierSecretValidUntil, first.previousSecretValidUntil);
    assert.equal(second.previousSecretValidUntil, new Date(clock.now() + 60_000).toISOString());
    assertError(await tokenWith(app, app.clientSecret), 401, 'invalid_client');
    assert.equal((await tokenWith(app, first.clientSecret)).status, 200);
    assert.equal((await tokenWith(app, second.clientSecret)).status, 200);

    // A rotation without a grace period ends the previous secret at once, as before this feature.
    const third = await server.tessera.apps.rotateSecret(app.appId, {}, OPERATOR);
    assert.equal(third.previousSecretValidUntil, null);
    assert.equal(third.endedEarlierSecretValidUntil, second.previousSecretValidUntil);
    for (const secret of [app.clientSecret, first.clientSecret, second.clientSecret])
      assertError(await tokenWith(app, secret), 401, 'invalid_client');
    assert.equal((await tokenWith(app, third.clientSecret)).status, 200);
  });

  it('refuses a grace period out of bounds, or with --revoke-admin-tokens, and rotates nothing', async () => {
    const app = await createConfiguredApp(server, {}, 'Bounds');
    for (const graceSeconds of [0, -1, 1.5, MAX_SECRET_GRACE_SECONDS + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await assert.rejects(
        server.tessera.apps.rotateSecret(app.appId, { graceSeconds }, OPERATOR),
        { code: 'invalid_request' },
        String(graceSeconds),
      );
    }
    await assert.rejects(server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 60, revokeAdminTokens: true }, OPERATOR), {
      code: 'invalid_request',
    });
    assert.equal((await tokenWith(app, app.clientSecret)).status, 200);
    const longest = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: MAX_SECRET_GRACE_SECONDS }, OPERATOR);
    assert.equal(longest.previousSecretValidUntil, new Date(clock.now() + MAX_SECRET_GRACE_SECONDS * 1000).toISOString());
  });

  it('--revoke-admin-tokens (no grace) revokes the admin tokens issued with either secret, and ends the previous one', async () => {
    const app = await createConfiguredApp(server, {}, 'Leaked during grace');
    const rotated = await server.tessera.apps.rotateSecret(app.appId, { graceSeconds: 3600 }, OPERATOR);
    const tokens = [
      (await tokenWith(app, app.clientSecret)).body.access_token,
      (await tokenWith(app, rotated.clientSecret)).body.access_token,
    ];
    for (const token of tokens) assert.equal((await whoami(app.appUrl, bearer(token))).status, 200);
    const leaked = await server.tessera.apps.rotateSecret(app.appId, { revokeAdminTokens: true }, OPERATOR);
    assert.equal(leaked.adminTokensRevoked, 2);
    for (const token of tokens) assertError(await whoami(app.appUrl, bearer(token)), 401, 'INVALID_TOKEN');
    for (const secret of [app.clientSecret, rotated.clientSecret]) assertError(await tokenWith(app, secret), 401, 'invalid_client');
    assert.equal((await tokenWith(app, leaked.clientSecret)).status, 200);
  });
});
