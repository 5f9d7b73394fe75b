import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_SECRET_GRACE_SECONDS, parseGraceSeconds } from '../../src/apps/secret-rotation.js';
import { clientSecretDigest } from '../../src/crypto.js';
import { matchAdminCredentials } from '../../src/tokens/client-authentication.js';
import { makeApp, T0 } from '../helpers/fixtures.js';

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
