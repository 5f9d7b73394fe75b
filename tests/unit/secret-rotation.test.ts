import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_SECRET_GRACE_SECONDS, parseGraceSeconds } from '../../src/apps/secret-rotation.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import type { EventLog } from '../../src/events/log.js';
import type { RateLimits } from '../../src/limits/rate-limits.js';
import { AdminAuthentication, matchAdminCredentials } from '../../src/tokens/client-authentication.js';
import { FakeClock } from '../helpers/clock.js';
import { makeApp, T0 } from '../helpers/fixtures.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { ClientCredentials } from '../../src/tokens/client-credentials.js';

/** Which secret `AdminAuthentication.match` found, from no particular address; null for a refusal. */
function secretOf(admins: AdminAuthentication, app: AppRecord, credentials: ClientCredentials) {
  const matched = admins.match(app, credentials, null);
  return 'secret' in matched ? matched.secret : null;
}

describe('matchAdminCredentials with a previous ClientSecret', () => {
  const current = 'c'.repeat(64);
  const previous = 'p'.repeat(64);
  const validUntil = T0 + 60_000;
  const app = makeApp({
    clientSecretHash: clientSecretDigest(current),
    previousSecret: { hash: clientSecretDigest(previous), validUntil },
  });
  const as = (clientSecret: string, clientId = app.clientId) => ({ clientId, clientSecret });

  it('says which secret matched: the current one at any time, the previous one before its end only', () => {
    assert.equal(matchAdminCredentials(app, as(current), T0), 'current');
    assert.equal(matchAdminCredentials(app, as(current), validUntil + 86_400_000), 'current');
    assert.equal(matchAdminCredentials(app, as(previous), T0), 'previous');
    assert.equal(matchAdminCredentials(app, as(previous), validUntil - 1), 'previous');
    assert.equal(matchAdminCredentials(app, as(previous), validUntil), null);
    assert.equal(matchAdminCredentials(app, as(previous), validUntil + 1), null);
  });

  it('needs the ClientID with either secret, and refuses anything else', () => {
    for (const secret of [current, previous]) assert.equal(matchAdminCredentials(app, as(secret, app.appId), T0), null);
    assert.equal(matchAdminCredentials(app, as('x'.repeat(64)), T0), null);
    assert.equal(matchAdminCredentials(app, as(''), T0), null);
  });

  it('refuses the previous secret of an app that has none (no digest of zeros matches anything)', () => {
    const without = { ...app, previousSecret: null };
    assert.equal(matchAdminCredentials(without, as(previous), T0), null);
    assert.equal(matchAdminCredentials(without, as(current), T0), 'current');
  });
});

describe('parseGraceSeconds (--grace)', () => {
  it('takes a whole number of seconds from 1 to 30 days', () => {
    assert.equal(parseGraceSeconds('1'), 1);
    assert.equal(parseGraceSeconds('3600'), 3600);
    assert.equal(parseGraceSeconds(String(MAX_SECRET_GRACE_SECONDS)), 30 * 86_400);
  });

  it('refuses anything else with invalid_request, saying what is expected', () => {
    for (const text of [
      '',
      '0',
      '00',
      '-1',
      '+5',
      '1.5',
      '1e3',
      '0x10',
      ' 60',
      '60 ',
      '60s',
      'Infinity',
      'NaN',
      String(MAX_SECRET_GRACE_SECONDS + 1),
      '9'.repeat(30),
    ]) {
      assert.throws(
        () => parseGraceSeconds(text),
        { code: 'invalid_request', message: /whole number of seconds from 1 to 2592000/ },
        JSON.stringify(text),
      );
    }
  });
});

describe('AdminAuthentication.match, which remembers the ClientSecret last verified for an app record', () => {
  const current = 'c'.repeat(64);
  const previous = 'p'.repeat(64);
  const validUntil = T0 + 60_000;
  const newAuthentication = (clock: FakeClock) =>
    // `match` counts and records nothing: no limits or event log are reached.
    new AdminAuthentication(undefined as unknown as RateLimits, undefined as unknown as EventLog, clock);

  it('answers the same as matchAdminCredentials, before and after remembering a secret', () => {
    const clock = new FakeClock();
    const admins = newAuthentication(clock);
    const app = makeApp({
      clientSecretHash: clientSecretDigest(current),
      previousSecret: { hash: clientSecretDigest(previous), validUntil },
    });
    const as = (clientSecret: string, clientId = app.clientId) => ({ clientId, clientSecret });
    for (let round = 0; round < 2; round++) {
      assert.equal(secretOf(admins, app, as(current)), 'current');
      assert.equal(secretOf(admins, app, as('x'.repeat(64))), null);
      assert.equal(secretOf(admins, app, as(current, app.appId)), null, 'the remembered secret with another ClientID');
      assert.equal(secretOf(admins, app, as(current.slice(1))), null);
    }
    assert.equal(secretOf(admins, app, as(previous)), 'previous');
    assert.equal(secretOf(admins, app, as(previous)), 'previous');
    clock.time = validUntil;
    assert.equal(secretOf(admins, app, as(previous)), null, 'a remembered previous secret ends at its end instant');
    assert.equal(secretOf(admins, app, as(current)), 'current');
  });

  it('forgets with the record: after a rotation the old secret is refused', () => {
    const admins = newAuthentication(new FakeClock());
    const before = makeApp({ clientSecretHash: clientSecretDigest(current) });
    assert.equal(secretOf(admins, before, { clientId: before.clientId, clientSecret: current }), 'current');
    const rotated = { ...before, clientSecretHash: clientSecretDigest('n'.repeat(64)), previousSecret: null };
    assert.equal(secretOf(admins, rotated, { clientId: before.clientId, clientSecret: current }), null);
    assert.equal(secretOf(admins, rotated, { clientId: before.clientId, clientSecret: 'n'.repeat(64) }), 'current');
  });
});
