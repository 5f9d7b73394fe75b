import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APP_ID_PATTERN } from 'tessera-tokens/internal/apps/app.js';
import { generateAppAccessKeys } from '../../src/apps/access-keys.js';
import { CLIENT_SECRET_PATTERN, generateClientSecret, isTesseraClientSecret } from '../../src/apps/secret-format.js';
import { ACCESS_TOKEN_LENGTH, generateAccessToken, parseAccessToken } from 'tessera-tokens/internal/tokens/token.js';
import { REPO_ROOT } from '../helpers/process.js';

const HEX = (length: number) => new RegExp(`^[0-9a-f]{${length}}$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('generateAppAccessKeys', () => {
  it('has the documented formats', () => {
    const keys = generateAppAccessKeys();
    assert.deepEqual(Object.keys(keys).sort(), ['adminId', 'appId', 'appKey', 'clientId', 'clientSecret']);
    assert.match(keys.appId, HEX(16));
    assert.match(keys.appKey, HEX(32));
    assert.match(keys.clientId, HEX(32));
    assert.match(
      keys.clientSecret,
      CLIENT_SECRET_PATTERN,
      'ClientSecret: tessera_, 43 base62 characters (256 bits), a 6-character checksum',
    );
    assert.ok(isTesseraClientSecret(keys.clientSecret));
    assert.match(keys.adminId, UUID);
    assert.match(keys.appId, APP_ID_PATTERN, 'an AppID must pass the URL check of the routes');
  });

  it('generateClientSecret (rotation) has the same form', () => {
    assert.match(generateClientSecret(), /^tessera_[0-9A-Za-z]{49}$/);
  });

  it('1000 generations are all distinct, and no value is reused across keys (AppID never equals ClientID)', () => {
    const seen = new Set<string>();
    let values = 0;
    for (let i = 0; i < 1000; i++) {
      const keys = generateAppAccessKeys();
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
  const now = Date.parse('2026-06-01T00:00:00.000Z');

  it(`is ${ACCESS_TOKEN_LENGTH} base64url characters: a 16-byte selector (time, random) and a 16-byte verifier`, () => {
    const issued = generateAccessToken(now);
    assert.equal(ACCESS_TOKEN_LENGTH, 43);
    assert.match(issued.token, /^[A-Za-z0-9_-]{43}$/);
    const bytes = Buffer.from(issued.token, 'base64url');
    assert.equal(bytes.length, 32);
    assert.deepEqual(issued.selector, bytes.subarray(0, 16));
    assert.equal(bytes.readUIntBE(0, 6), now, 'the selector starts with the issue time');
    assert.deepEqual(issued.verifierHash, createHash('sha256').update(bytes.subarray(16)).digest());
  });

  it('is parsed back into its selector and a verifier that hashes to the stored hash', () => {
    const issued = generateAccessToken(now);
    const parsed = parseAccessToken(issued.token)!;
    assert.deepEqual(parsed.selector, issued.selector);
    assert.deepEqual(createHash('sha256').update(parsed.verifier).digest(), issued.verifierHash);
  });

  it('10,000 tokens of the same millisecond (crossing the internal pool boundary) are all distinct, selectors too', () => {
    const tokens = new Set<string>();
    const selectors = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const issued = generateAccessToken(now);
      assert.equal(issued.token.length, ACCESS_TOKEN_LENGTH);
      tokens.add(issued.token);
      selectors.add(issued.selector.toString('hex'));
    }
    assert.equal(tokens.size, 10_000);
    assert.equal(selectors.size, 10_000);
  });

  it('orders selectors by issue time, so new tokens land at the end of the store index', () => {
    const earlier = generateAccessToken(now).selector;
    const later = generateAccessToken(now + 1).selector;
    assert.ok(Buffer.compare(earlier, later) < 0);
  });

  it('uses every base64url character in its random part (the bytes are not biased towards zero)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2400; i++) {
      // Characters 8..41 encode random bytes only (the first 8 are the time; the last has 4 bits).
      for (const char of generateAccessToken(now).token.slice(8, 42)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    assert.equal(counts.size, 64);
    // 81,600 characters: each of the 64 expected ~1275 times; a zeroed slice would make "A" stand out.
    for (const [char, count] of counts) assert.ok(count > 1000 && count < 1600, `${char}: ${count}`);
  });
});

describe('parseAccessToken', () => {
  const good = 'A'.repeat(21) + '-_' + 'z9'.repeat(9) + 'zA';

  it('accepts 43 base64url characters', () => {
    assert.equal(good.length, 43);
    assert.notEqual(parseAccessToken(good), undefined);
  });

  it('refuses another length', () => {
    for (const value of ['', good.slice(1), `${good}A`, 'A'.repeat(512)]) {
      assert.equal(parseAccessToken(value), undefined, `length ${value.length}`);
    }
  });

  it('refuses a last character with padding bits set: each token has one spelling', () => {
    assert.notEqual(parseAccessToken(`${good.slice(0, 42)}E`), undefined);
    for (const last of ['B', 'C', 'D', 'F', 'z', '9', '-', '_']) {
      assert.equal(parseAccessToken(`${good.slice(0, 42)}${last}`), undefined, last);
    }
  });

  it('refuses characters outside base64url', () => {
    for (const char of ['+', '/', '=', ' ', '\t', '\n', '.', '%', 'é', '\u0000']) {
      const value = good.slice(0, 20) + char + good.slice(21);
      assert.equal(value.length, 43);
      assert.equal(parseAccessToken(value), undefined, JSON.stringify(char));
    }
    assert.equal(parseAccessToken(` ${good.slice(1)}`), undefined);
    assert.equal(parseAccessToken(`${good.slice(1)} `), undefined);
  });
});

describe('ClientSecrets made for secret scanners', () => {
  it('carry a checksum that a changed character breaks', () => {
    for (let i = 0; i < 200; i++) {
      const secret = generateClientSecret();
      assert.ok(isTesseraClientSecret(secret), secret);
      const at = 8 + (i % 49);
      const other = secret[at] === 'a' ? 'b' : 'a';
      assert.equal(isTesseraClientSecret(secret.slice(0, at) + other + secret.slice(at + 1)), false, `${secret} changed at ${at}`);
    }
  });

  it('are recognised only in their own form: not a hex secret, another prefix, or a length off by one', () => {
    const secret = generateClientSecret();
    assert.equal(isTesseraClientSecret('f'.repeat(64)), false);
    assert.equal(isTesseraClientSecret(`tesserb_${secret.slice(8)}`), false);
    assert.equal(isTesseraClientSecret(secret.slice(0, -1)), false);
    assert.equal(isTesseraClientSecret(`${secret}0`), false);
    assert.equal(isTesseraClientSecret(`tessera_${'0'.repeat(49)}`), false, 'a checksum of zeros is not the CRC of zeros');
  });

  it('use every base62 character about equally often (no modulo bias)', () => {
    const counts = new Map<string, number>();
    const samples = 4000;
    for (let i = 0; i < samples; i++) {
      for (const character of generateClientSecret().slice(8, 51)) counts.set(character, (counts.get(character) ?? 0) + 1);
    }
    assert.equal(counts.size, 62);
    const expected = (samples * 43) / 62;
    for (const [character, count] of counts)
      assert.ok(Math.abs(count - expected) < expected * 0.15, `${character}: ${count} against ${expected}`);
  });
});

describe('docs/gitleaks.toml', () => {
  // The expression gitleaks compiles (Go's RE2); this one needs nothing that JavaScript reads otherwise.
  const expression = /regex = '''(.+)'''/.exec(readFileSync(join(REPO_ROOT, 'docs', 'gitleaks.toml'), 'utf8'))?.[1];

  it('matches every new ClientSecret in text, and nothing without the prefix', () => {
    assert.ok(expression !== undefined, 'a regex line in docs/gitleaks.toml');
    const rule = new RegExp(expression, 'g');
    const secret = generateClientSecret();
    assert.deepEqual(`CLIENT_SECRET="${secret}"\nother=${secret.slice(8)}`.match(rule), [secret]);
    assert.equal(`hex=${'ab'.repeat(32)}`.match(rule), null);
  });
});
