import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasMeSegment } from 'tessera-tokens/internal/auth/authenticate.js';
import { decodeFormComponent, MAX_AUTHORIZATION_LENGTH, parseAuthorization } from 'tessera-tokens/internal/tokens/authorization-header.js';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const NONE = { scheme: 'none' };
/** Base64 without padding, so that the header can have any length (the parser accepts it). */
const unpaddedBasic = (text: string): string => `Basic ${b64(text).replace(/=+$/, '')}`;

describe('parseAuthorization: Basic', () => {
  it('splits user and password', () => {
    assert.deepEqual(parseAuthorization(`Basic ${b64('app1:secret')}`), { scheme: 'basic', user: 'app1', password: 'secret' });
  });

  it('treats the scheme case-insensitively (RFC 7235)', () => {
    for (const scheme of ['basic', 'BASIC', 'bAsIc']) {
      assert.deepEqual(parseAuthorization(`${scheme} ${b64('u:p')}`), { scheme: 'basic', user: 'u', password: 'p' }, scheme);
    }
  });

  it('accepts an empty password and an empty user', () => {
    assert.deepEqual(parseAuthorization(`Basic ${b64('app1:')}`), { scheme: 'basic', user: 'app1', password: '' });
    assert.deepEqual(parseAuthorization(`Basic ${b64(':pw')}`), { scheme: 'basic', user: '', password: 'pw' });
  });

  it('splits at the first colon: the password may contain colons', () => {
    assert.deepEqual(parseAuthorization(`Basic ${b64('app1:pa:ss:')}`), { scheme: 'basic', user: 'app1', password: 'pa:ss:' });
  });

  it('decodes the credentials as UTF-8', () => {
    assert.deepEqual(parseAuthorization(`Basic ${b64('üser-名前:pässwörd')}`), {
      scheme: 'basic',
      user: 'üser-名前',
      password: 'pässwörd',
    });
  });

  it('is none when the decoded value has no colon', () => {
    assert.deepEqual(parseAuthorization(`Basic ${b64('app1')}`), NONE);
  });

  it('is none when the value is not base64', () => {
    for (const value of ['!!!!', 'YXBwMTp4*', 'YXBw MTp4', '=YXBwMTp4', 'YXBwMTp4===', '']) {
      assert.deepEqual(parseAuthorization(`Basic ${value}`), NONE, JSON.stringify(value));
    }
  });

  it('tolerates extra spaces between the scheme and the value, and trailing spaces', () => {
    assert.deepEqual(parseAuthorization(`Basic   ${b64('u:p')}  `), { scheme: 'basic', user: 'u', password: 'p' });
  });

  it('is none without any space after the scheme', () => {
    assert.deepEqual(parseAuthorization('Basic'), NONE);
    assert.deepEqual(parseAuthorization(`Basic${b64('u:p')}`), NONE);
  });
});

describe('parseAuthorization: Bearer', () => {
  it('returns the token', () => {
    assert.deepEqual(parseAuthorization('Bearer abc-DEF_123'), { scheme: 'bearer', token: 'abc-DEF_123' });
  });

  it('treats the scheme case-insensitively', () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      assert.deepEqual(parseAuthorization(`${scheme} tok`), { scheme: 'bearer', token: 'tok' }, scheme);
    }
  });

  it('trims spaces around the token', () => {
    assert.deepEqual(parseAuthorization('Bearer    tok   '), { scheme: 'bearer', token: 'tok' });
  });

  it('is a Bearer with an empty token for a bare or empty "Bearer" (a malformed token, docs/decisions.md)', () => {
    for (const header of ['Bearer', 'bearer', 'Bearer ', 'Bearer    ']) {
      assert.deepEqual(parseAuthorization(header), { scheme: 'bearer', token: '' }, JSON.stringify(header));
    }
  });
});

describe('parseAuthorization: anything else', () => {
  it('is none when the header is missing or empty', () => {
    assert.deepEqual(parseAuthorization(undefined), NONE);
    assert.deepEqual(parseAuthorization(''), NONE);
  });

  it('is none for other schemes', () => {
    for (const header of [`Digest ${b64('u:p')}`, 'Token abc', 'Negotiate abc', `Basic-x ${b64('u:p')}`, `Bearerx tok`]) {
      assert.deepEqual(parseAuthorization(header), NONE, header);
    }
  });

  it('is none when the header starts with a space (no scheme)', () => {
    assert.deepEqual(parseAuthorization(` Basic ${b64('u:p')}`), NONE);
    assert.deepEqual(parseAuthorization(' Bearer tok'), NONE);
  });

  it(`parses a header of exactly ${MAX_AUTHORIZATION_LENGTH} characters`, () => {
    const bearer = `Bearer ${'a'.repeat(MAX_AUTHORIZATION_LENGTH - 'Bearer '.length)}`;
    assert.equal(bearer.length, MAX_AUTHORIZATION_LENGTH);
    assert.deepEqual(parseAuthorization(bearer), { scheme: 'bearer', token: bearer.slice('Bearer '.length) });
    const password = 'p'.repeat(4613);
    const basic = unpaddedBasic(`u:${password}`);
    assert.equal(basic.length, MAX_AUTHORIZATION_LENGTH);
    assert.deepEqual(parseAuthorization(basic), { scheme: 'basic', user: 'u', password });
  });

  it(`is none for a Basic header longer than ${MAX_AUTHORIZATION_LENGTH} characters`, () => {
    const basic = unpaddedBasic(`u:${'p'.repeat(4614)}`);
    assert.equal(basic.length, MAX_AUTHORIZATION_LENGTH + 1);
    assert.deepEqual(parseAuthorization(basic), NONE);
    assert.deepEqual(parseAuthorization(`Basic ${b64(`u:${'p'.repeat(1_000_000)}`)}`), NONE);
  });

  it(`is a Bearer with an empty token (never the long value) for a Bearer header longer than ${MAX_AUTHORIZATION_LENGTH} characters`, () => {
    const bearerAt = (length: number) => `Bearer ${'a'.repeat(length - 'Bearer '.length)}`;
    assert.deepEqual(parseAuthorization(bearerAt(MAX_AUTHORIZATION_LENGTH + 1)), { scheme: 'bearer', token: '' });
    assert.deepEqual(parseAuthorization(bearerAt(1_000_000)), { scheme: 'bearer', token: '' });
  });
});

describe('decodeFormComponent (client_secret_basic, RFC 6749 §2.3.1)', () => {
  it('leaves plain values alone', () => {
    assert.equal(decodeFormComponent('0123456789abcdef'), '0123456789abcdef');
    assert.equal(decodeFormComponent(''), '');
  });

  it('decodes "+" as a space and percent-escapes, including UTF-8', () => {
    assert.equal(decodeFormComponent('a+b'), 'a b');
    assert.equal(decodeFormComponent('a%2Bb'), 'a+b');
    assert.equal(decodeFormComponent('a%3Ab%25'), 'a:b%');
    assert.equal(decodeFormComponent('%C3%BC%E5%90%8D'), 'ü名');
  });

  it('returns a value with broken percent-encoding unchanged', () => {
    assert.equal(decodeFormComponent('100%'), '100%');
    assert.equal(decodeFormComponent('a%zzb'), 'a%zzb');
    assert.equal(decodeFormComponent('%C3'), '%C3');
  });
});

describe('hasMeSegment (the /me rule)', () => {
  const cases: [string, boolean][] = [
    ['/users/me', true],
    ['/users/me/', true],
    ['/users/me/x', true],
    ['/me', true],
    ['/api/apps/abc/users/me/buckets/b', true],
    ['/users/%6De', true],
    ['/users/%6d%65', true],
    ['/users/%6D%65/x', true],
    ['/users/me?x=1', true],
    ['/users/%6De?x=1', true],
    ['/users/mee', false],
    ['/users/xme', false],
    ['/meme', false],
    ['/users/ME', true],
    ['/users/Me/x', true],
    ['/users/mE', true],
    ['/users/%4De', true],
    ['/users/MEE', false],
    ['/users/x?me', false],
    ['/users/x?u=/me', false],
    ['/users/%256De', false],
    ['/users/x', false],
    ['/', false],
    ['', false],
    ['/users/%E0%A4%A/me', true],
    ['/users/%E0%A4%A', false],
    ['/users/me%', false],
    ['/users/%', false],
  ];
  for (const [path, expected] of cases) {
    it(`${JSON.stringify(path)} -> ${expected}`, () => {
      assert.equal(hasMeSegment(path), expected);
    });
  }
});
