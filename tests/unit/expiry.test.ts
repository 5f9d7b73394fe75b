import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { expiresInSeconds, isExpired, MAX_INSTANT, NEVER_EXPIRES_IN, resolveExpiry } from 'tessera-tokens/internal/tokens/expiry.js';
import { FakeClock } from '../helpers/clock.js';

const NOW = new FakeClock().now();
const HOUR = 3_600_000;

function invalidRequest(error: unknown): boolean {
  assert.ok(error instanceof TesseraError, `expected a TesseraError, got ${String(error)}`);
  assert.equal(error.code, 'invalid_request');
  return true;
}

describe('resolveExpiry', () => {
  it('is null (never) without expiresAt and without a maximum lifetime', () => {
    assert.equal(resolveExpiry(NOW, null, null), null);
  });

  it('is now + the maximum lifetime without expiresAt when the app sets a maximum', () => {
    assert.equal(resolveExpiry(NOW, null, 3600), NOW + HOUR);
  });

  it('keeps a future expiresAt as it is', () => {
    assert.equal(resolveExpiry(NOW, NOW + 1, null), NOW + 1);
    assert.equal(resolveExpiry(NOW, NOW + 24 * HOUR, null), NOW + 24 * HOUR);
  });

  it('refuses an expiresAt that is now or in the past', () => {
    for (const at of [NOW, NOW - 1, 0]) {
      assert.throws(() => resolveExpiry(NOW, at, null), invalidRequest, String(at));
      assert.throws(() => resolveExpiry(NOW, at, 3600), invalidRequest, String(at));
    }
  });

  it('accepts MAX_INSTANT (the last valid Date) and refuses anything later', () => {
    assert.ok(Number.isFinite(new Date(MAX_INSTANT).getTime()));
    assert.ok(Number.isNaN(new Date(MAX_INSTANT + 1).getTime()));
    assert.equal(resolveExpiry(NOW, MAX_INSTANT, null), MAX_INSTANT);
    assert.throws(() => resolveExpiry(NOW, MAX_INSTANT + 1, null), invalidRequest);
    assert.throws(() => resolveExpiry(NOW, Number.MAX_SAFE_INTEGER, null), invalidRequest);
  });

  it('accepts an expiresAt exactly at the maximum lifetime and refuses one millisecond more', () => {
    assert.equal(resolveExpiry(NOW, NOW + HOUR, 3600), NOW + HOUR);
    assert.equal(resolveExpiry(NOW, NOW + 1, 3600), NOW + 1);
    assert.throws(() => resolveExpiry(NOW, NOW + HOUR + 1, 3600), invalidRequest);
  });
});

describe('expiresInSeconds', () => {
  it('counts whole seconds from now, rounded down', () => {
    assert.equal(expiresInSeconds(NOW, NOW + 86_400_000), 86400);
    assert.equal(expiresInSeconds(NOW, NOW + 86_400_999), 86400);
    assert.equal(expiresInSeconds(NOW, NOW + 1000), 1);
    assert.equal(expiresInSeconds(NOW, NOW + 999), 0);
    assert.equal(expiresInSeconds(NOW, NOW + 1), 0);
  });

  it(`is ${NEVER_EXPIRES_IN} for a token that never expires`, () => {
    assert.equal(NEVER_EXPIRES_IN, 2147483646);
    assert.equal(expiresInSeconds(NOW, null), 2147483646);
  });

  it(`is capped at ${NEVER_EXPIRES_IN} for a far-future expiry`, () => {
    assert.equal(expiresInSeconds(NOW, NOW + 2147483646 * 1000), 2147483646);
    assert.equal(expiresInSeconds(NOW, NOW + 2147483646 * 1000 - 1), 2147483645);
    assert.equal(expiresInSeconds(NOW, NOW + 2147483647 * 1000), 2147483646);
    assert.equal(expiresInSeconds(NOW, MAX_INSTANT), 2147483646);
  });
});

describe('isExpired', () => {
  const T = NOW + HOUR;
  it('a token requested to expire at T works until T and not from T on', () => {
    assert.equal(isExpired(T - 1, T), false);
    assert.equal(isExpired(T, T), true);
    assert.equal(isExpired(T + 1, T), true);
  });

  it('a token without expiry never expires', () => {
    assert.equal(isExpired(NOW, null), false);
    assert.equal(isExpired(MAX_INSTANT, null), false);
  });
});
