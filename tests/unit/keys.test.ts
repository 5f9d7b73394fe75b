import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APP_ID_PATTERN } from '../../src/apps/app.js';
import { generateAppKeys, generateClientSecret } from '../../src/apps/keys.js';
import { ACCESS_TOKEN_LENGTH, generateAccessToken, isWellFormedAccessToken } from '../../src/tokens/token.js';

const HEX = (length: number) => new RegExp(`^[0-9a-f]{${length}}$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('generateAppKeys', () => {
  it('has the documented formats', () => {
    const keys = generateAppKeys();
    assert.deepEqual(Object.keys(keys).sort(), ['adminId', 'appId', 'appKey', 'clientId', 'clientSecret']);
    assert.match(keys.appId, HEX(16));
    assert.match(keys.appKey, HEX(32));
    assert.match(keys.clientId, HEX(32));
    assert.match(keys.clientSecret, HEX(64), 'ClientSecret: 64 hex characters = 256 bits');
    assert.match(keys.adminId, UUID);
    assert.match(keys.appId, APP_ID_PATTERN, 'an AppID must pass the URL check of the routes');
  });

  it('generateClientSecret (rotation) has 256 bits too', () => {
    assert.match(generateClientSecret(), HEX(64));
  });

  it('1000 generations are all distinct, and no value is reused across keys (AppID never equals ClientID)', () => {
    const seen = new Set<string>();
    let values = 0;
    for (let i = 0; i < 1000; i++) {
      const keys = generateAppKeys();
      assert.notEqual(keys.appId, keys.clientId);
      for (const value of Object.values(keys)) {
        seen.add(value);
        values++;
      }
    }
    assert.equal(seen.size, values);
  });
});

describe('generateAccessToken', () => {
  it(`is ${ACCESS_TOKEN_LENGTH} base64url characters encoding 32 bytes, and well-formed`, () => {
    const token = generateAccessToken();
    assert.equal(ACCESS_TOKEN_LENGTH, 43);
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(token, 'base64url').length, 32);
    assert.equal(isWellFormedAccessToken(token), true);
  });

  it('10,000 tokens (crossing the internal pool boundary many times) are all distinct and none is all zeros', () => {
    const zero = Buffer.alloc(32).toString('base64url');
    const tokens = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const token = generateAccessToken();
      assert.equal(token.length, ACCESS_TOKEN_LENGTH);
      assert.notEqual(token, zero);
      tokens.add(token);
    }
    assert.equal(tokens.size, 10_000);
  });

  it('uses every base64url character (the bytes are not biased towards zero)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      // The last character carries only 4 significant bits; count the first 42.
      for (const char of generateAccessToken().slice(0, 42)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    assert.equal(counts.size, 64);
    // 84,000 characters: each of the 64 expected ~1312 times; a zeroed slice would make "A" stand out.
    for (const [char, count] of counts) assert.ok(count > 1000 && count < 1650, `${char}: ${count}`);
  });
});

describe('isWellFormedAccessToken', () => {
  const good = 'A'.repeat(21) + '-_' + 'z9'.repeat(10);

  it('accepts 43 base64url characters', () => {
    assert.equal(good.length, 43);
    assert.equal(isWellFormedAccessToken(good), true);
  });

  it('refuses another length', () => {
    for (const value of ['', good.slice(1), `${good}A`, 'A'.repeat(512)]) {
      assert.equal(isWellFormedAccessToken(value), false, `length ${value.length}`);
    }
  });

  it('refuses characters outside base64url', () => {
    for (const char of ['+', '/', '=', ' ', '\t', '\n', '.', '%', 'é', '\u0000']) {
      const value = good.slice(0, 20) + char + good.slice(21);
      assert.equal(value.length, 43);
      assert.equal(isWellFormedAccessToken(value), false, JSON.stringify(char));
    }
    assert.equal(isWellFormedAccessToken(` ${good.slice(1)}`), false);
    assert.equal(isWellFormedAccessToken(`${good.slice(1)} `), false);
  });
});
