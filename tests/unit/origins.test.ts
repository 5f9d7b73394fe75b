import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  canonicalOrigin,
  isOriginAllowed,
  MAX_ALLOWED_ORIGINS,
  MAX_ORIGIN_LENGTH,
  parseAllowedOrigins,
} from 'tessera-tokens/internal/apps/origins.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

describe('canonicalOrigin: what allowedOrigins accepts, in the form browsers send', () => {
  it('keeps an origin already canonical as it is', () => {
    for (const origin of [
      'https://app.example.com',
      'http://localhost:5173',
      'http://127.0.0.1:8080',
      'http://[::1]:3000',
      'https://a-b.c-d.example',
      'https://xn--bcher-kva.example',
      'https://*.example.com',
      'https://*.example.com:8443',
    ]) {
      assert.equal(canonicalOrigin(origin), origin);
    }
  });

  it('writes it as browsers do: lower case, no default port, no trailing slash, punycode', () => {
    assert.equal(canonicalOrigin('HTTPS://App.Example.COM'), 'https://app.example.com');
    assert.equal(canonicalOrigin('https://app.example.com:443'), 'https://app.example.com');
    assert.equal(canonicalOrigin('http://app.example.com:80'), 'http://app.example.com');
    assert.equal(canonicalOrigin('http://app.example.com:443'), 'http://app.example.com:443');
    assert.equal(canonicalOrigin('https://app.example.com/'), 'https://app.example.com');
    assert.equal(canonicalOrigin('https://bücher.example'), 'https://xn--bcher-kva.example');
    assert.equal(canonicalOrigin('https://*.Example.com:443'), 'https://*.example.com');
  });

  it('refuses anything but scheme://host[:port] with http or https', () => {
    for (const text of [
      '',
      'null',
      '*',
      'app.example.com',
      '//app.example.com',
      'ftp://app.example.com',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'https://',
      'https:///path',
      'https://app.example.com/path',
      'https://app.example.com//',
      'https://app.example.com?x=1',
      'https://app.example.com?',
      'https://app.example.com#x',
      'https://user@app.example.com',
      'https://user:pass@app.example.com',
      'https://app.example.com:0',
      'https://app.example.com:65536',
      'https://app.example.com:x',
      'https://app example.com',
      ' https://app.example.com',
      'https://app.example.com ',
      'https://app.example.com\n',
      'https://app\\.example.com',
      'https://exa_mple.com',
      'https://a..b',
      'https://app.example.com.',
      'https://-app.example.com',
      'https://*',
      'https://*.com',
      'https://*.*.example.com',
      'https://a.*.example.com',
      'https://*example.com',
      'https://*.1.2.3.4',
      'https://*.[::1]',
      'http://*.localhost',
      `https://${'a'.repeat(MAX_ORIGIN_LENGTH)}.example`,
    ]) {
      assert.equal(canonicalOrigin(text), undefined, JSON.stringify(text));
    }
  });
});

describe('parseAllowedOrigins: the allowedOrigins field of a configuration change', () => {
  const refuses = (value: unknown, pattern: RegExp) =>
    assert.throws(
      () => parseAllowedOrigins(value, 'allowedOrigins'),
      (error: unknown) => error instanceof TesseraError && error.code === 'invalid_request' && pattern.test(error.message),
    );

  it('answers the canonical origins, duplicates dropped, in the order given; null or [] is none', () => {
    assert.deepEqual(parseAllowedOrigins(['https://B.example', 'https://a.example', 'https://b.example:443/'], 'allowedOrigins'), [
      'https://b.example',
      'https://a.example',
    ]);
    assert.deepEqual(parseAllowedOrigins(null, 'allowedOrigins'), []);
    assert.deepEqual(parseAllowedOrigins([], 'allowedOrigins'), []);
  });

  it('refuses what is not a list of origins, naming the first bad entry', () => {
    refuses('https://app.example.com', /must be a list of origins/);
    refuses({ 0: 'https://app.example.com' }, /must be a list of origins/);
    refuses(
      ['https://ok.example', 'https://app.example.com/path'],
      /allowedOrigins\[1\] \("https:\/\/app\.example\.com\/path"\) is not an origin/,
    );
    refuses(['https://ok.example', 42], /allowedOrigins\[1\] \(a number\)/);
    refuses([null], /allowedOrigins\[0\] \(a null\)/);
    refuses(['https://x.example\u001b[2J'], /\\u001b/);
  });

  it('takes at most MAX_ALLOWED_ORIGINS', () => {
    const origins = Array.from({ length: MAX_ALLOWED_ORIGINS + 1 }, (_, index) => `https://app${index}.example.com`);
    assert.equal(parseAllowedOrigins(origins.slice(0, MAX_ALLOWED_ORIGINS), 'allowedOrigins').length, MAX_ALLOWED_ORIGINS);
    refuses(origins, new RegExp(`at most ${MAX_ALLOWED_ORIGINS} origins`));
  });
});

describe("isOriginAllowed: a request's Origin against the list", () => {
  const allowed = ['https://app.example.com', 'http://localhost:5173', 'https://*.example.org', 'https://*.example.net:8443'];

  it('matches an exact origin exactly', () => {
    assert.equal(isOriginAllowed(allowed, 'https://app.example.com'), true);
    assert.equal(isOriginAllowed(allowed, 'http://localhost:5173'), true);
    for (const origin of [
      'http://app.example.com',
      'https://app.example.com:8443',
      'https://app.example.co',
      'https://xapp.example.com',
      'http://localhost:5174',
      'null',
      '',
    ]) {
      assert.equal(isOriginAllowed(allowed, origin), false, origin);
    }
  });

  it('matches a wildcard for every subdomain at any depth, same scheme and port, not the domain itself', () => {
    for (const origin of ['https://a.example.org', 'https://a.b.example.org', 'https://a.example.net:8443']) {
      assert.equal(isOriginAllowed(allowed, origin), true, origin);
    }
    for (const origin of [
      'https://example.org',
      'https://.example.org',
      'http://a.example.org',
      'https://a.example.org:8443',
      'https://a.example.org.evil.com',
      'https://evilexample.org',
      'https://a.example.net',
      'https://a.example.net:8444',
      'https://evil.com/.example.org',
      'https://evil.com?.example.org',
      'https://a..example.org',
    ]) {
      assert.equal(isOriginAllowed(allowed, origin), false, origin);
    }
  });

  it('matches nothing when the list is empty', () => {
    assert.equal(isOriginAllowed([], 'https://app.example.com'), false);
  });
});
