import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { hasMeSegment } from 'tessera-tokens/internal/auth/authenticate.js';
import { MAX_AUTHORIZATION_LENGTH, parseAuthorization } from 'tessera-tokens/internal/tokens/authorization-header.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { MAX_CREDENTIAL_LENGTH, parseTokenRequest, type TokenRequest } from '../../src/tokens/request.js';

/**
 * Property-based tests of the parsers every request goes through: the `Authorization` header, the
 * `/me` rule's path check and the token request body. Fixed seed; `FC_SEED=<n>` runs another.
 */

const SEED = Number(process.env.FC_SEED ?? 20_251_104);
const RUNS = Number(process.env.FC_UNIT_RUNS ?? 3000);

function check<T extends unknown[]>(property: fc.IPropertyWithHooks<T>, numRuns = RUNS): void {
  try {
    fc.assert(property, { seed: SEED, numRuns });
  } catch (error) {
    throw new Error(`failed with seed ${SEED} (replay: FC_SEED=${SEED})\n${(error as Error).message}`, { cause: error });
  }
}

// ---- generators -----------------------------------------------------------------------------------

/** Any Unicode code point but the surrogates, as a string. (fast-check's own `unit: 'binary'` builds a table of ~80 MB.) */
const codePoint = fc.integer({ min: 0, max: 0x10ffff - 0x800 }).map((n) => String.fromCodePoint(n < 0xd800 ? n : n + 0x800));
// prettier-ignore
const special = fc.constantFrom('\0', '%', ':', ' ', '\t', '\r', '\n', '\u00a0', '\uFEFF', '\u2028', '\uD800', '\uDC00', 'é', '名', '😀', '=', '+', '/');
/** Any UTF-16 string, lone surrogates and control characters included. */
const anyString = (maxLength = 60) =>
  fc.string({
    unit: fc.oneof(
      special,
      codePoint,
      fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    ),
    maxLength,
  });
/** A well-formed Unicode string (no lone surrogates): what survives UTF-8 intact. */
const unicodeString = (maxLength = 60) =>
  fc.string({
    unit: fc.oneof(
      special.filter((c) => !/[\uD800-\uDFFF]/.test(c)),
      codePoint,
    ),
    maxLength,
  });
/** A scheme name in any letter case, as RFC 7235 allows. */
const spelled = (scheme: string) =>
  fc
    .array(fc.boolean(), { minLength: scheme.length, maxLength: scheme.length })
    .map((upper) => [...scheme].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
const spaces = fc.integer({ min: 1, max: 4 }).map((n) => ' '.repeat(n));
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** Headers of every kind: near-Basic, near-Bearer, other schemes, garbage, oversized. */
const anyHeader = fc.oneof(
  anyString(80),
  fc
    .tuple(fc.oneof(spelled('basic'), spelled('bearer'), anyString(10)), fc.constantFrom(' ', '', '  ', '\t'), anyString(80))
    .map((parts) => parts.join('')),
  fc.tuple(spelled('basic'), unicodeString(40)).map(([scheme, text]) => `${scheme} ${b64(text)}`),
  fc.tuple(spelled('basic'), fc.base64String({ maxLength: 80 })).map(([scheme, value]) => `${scheme} ${value}`),
  fc
    .tuple(
      fc.constantFrom('Basic ', 'Bearer ', ''),
      fc.integer({ min: MAX_AUTHORIZATION_LENGTH - 10, max: MAX_AUTHORIZATION_LENGTH * 3 }),
      fc.constantFrom('A', 'a', '=', ' ', '名'),
    )
    .map(([prefix, length, fill]) => prefix + fill.repeat(length)),
);

// ---- parseAuthorization ---------------------------------------------------------------------------

describe('parseAuthorization (properties)', () => {
  it('never throws, and returns one of the three shapes with string fields', () => {
    check(
      fc.property(fc.option(anyHeader, { nil: undefined }), (header) => {
        const parsed = parseAuthorization(header);
        if (parsed.scheme === 'none') assert.deepEqual(parsed, { scheme: 'none' });
        else if (parsed.scheme === 'bearer') assert.deepEqual(Object.keys(parsed).sort(), ['scheme', 'token']);
        else assert.deepEqual(Object.keys(parsed).sort(), ['password', 'scheme', 'user']);
        for (const value of Object.values(parsed)) assert.equal(typeof value, 'string');
      }),
    );
  });

  it('gives back any user without ":" and any password encoded as Basic, in any letter case and spacing', () => {
    check(
      fc.property(
        unicodeString(40).map((user) => user.replaceAll(':', '')),
        // Passwords up to and past what fits in a header of the maximum length.
        fc.oneof(unicodeString(80), fc.string({ minLength: 1400, maxLength: 1600 })),
        spelled('basic'),
        spaces,
        fc.constantFrom('', ' ', '  '),
        fc.boolean(),
        (user, password, scheme, separator, trailing, unpadded) => {
          const encoded = b64(`${user}:${password}`);
          const header = `${scheme}${separator}${unpadded ? encoded.replace(/=+$/, '') : encoded}${trailing}`;
          fc.pre(header.length <= MAX_AUTHORIZATION_LENGTH);
          assert.deepEqual(parseAuthorization(header), { scheme: 'basic', user, password });
        },
      ),
    );
  });

  it('splits Basic credentials at the first colon: the password keeps every later one', () => {
    check(
      fc.property(
        unicodeString(20).map((user) => user.replaceAll(':', '')),
        fc.array(unicodeString(10), { minLength: 2, maxLength: 5 }),
        (user, parts) => {
          const password = parts.join(':');
          assert.deepEqual(parseAuthorization(`Basic ${b64(`${user}:${password}`)}`), { scheme: 'basic', user, password });
        },
      ),
    );
  });

  it('is none for a Basic value without a colon, or that is not base64', () => {
    check(
      fc.property(
        unicodeString(60).map((text) => text.replaceAll(':', '')),
        (text) => {
          assert.deepEqual(parseAuthorization(`Basic ${b64(text)}`), { scheme: 'none' });
        },
      ),
    );
    check(
      fc.property(
        anyString(40).filter((value) => !/^[A-Za-z0-9+/]+={0,2}$/.test(value.trim())),
        (value) => {
          assert.deepEqual(parseAuthorization(`Basic ${value}`), { scheme: 'none' });
        },
      ),
    );
  });

  it('gives scheme bearer for a Bearer header with a token of any shape, the token itself when it fits', () => {
    check(
      fc.property(spelled('bearer'), spaces, anyString(100), (scheme, separator, token) => {
        const header = `${scheme}${separator}${token}`;
        const parsed = parseAuthorization(header);
        assert.equal(parsed.scheme, 'bearer');
        assert.ok(parsed.scheme === 'bearer' && parsed.token.length <= MAX_AUTHORIZATION_LENGTH);
        // Surrounding whitespace is not part of a token (RFC 6750's token68 has none).
        if (header.length <= MAX_AUTHORIZATION_LENGTH && token === token.trim()) assert.deepEqual(parsed, { scheme: 'bearer', token });
      }),
    );
    check(
      fc.property(spelled('bearer'), fc.stringMatching(/^[A-Za-z0-9\-._~+/]+=*$/), (scheme, token) => {
        fc.pre(scheme.length + 1 + token.length <= MAX_AUTHORIZATION_LENGTH);
        assert.deepEqual(parseAuthorization(`${scheme} ${token}`), { scheme: 'bearer', token });
      }),
    );
  });

  it(`yields no credentials from a header longer than ${MAX_AUTHORIZATION_LENGTH} characters`, () => {
    check(
      fc.property(
        fc.oneof(spelled('basic'), spelled('bearer'), anyString(10)),
        fc.integer({ min: MAX_AUTHORIZATION_LENGTH + 1, max: MAX_AUTHORIZATION_LENGTH * 4 }),
        fc.oneof(
          unicodeString(20).map((text) => b64(`u:${text}`)),
          fc.constant('A'),
        ),
        (scheme, length, unit) => {
          const value = unit.repeat(Math.ceil(length / Math.max(unit.length, 1))).slice(0, Math.max(length - scheme.length - 1, 0));
          const header = `${scheme} ${value}`;
          fc.pre(header.length > MAX_AUTHORIZATION_LENGTH);
          const parsed = parseAuthorization(header);
          assert.ok(parsed.scheme === 'none' || (parsed.scheme === 'bearer' && parsed.token === ''), JSON.stringify(parsed).slice(0, 200));
        },
      ),
      500,
    );
  });

  it('is none for any other scheme', () => {
    check(
      fc.property(
        anyString(12).filter((scheme) => !scheme.includes(' ') && !['basic', 'bearer'].includes(scheme.toLowerCase())),
        anyString(60),
        (scheme, rest) => {
          assert.deepEqual(parseAuthorization(`${scheme} ${rest}`), { scheme: 'none' });
          assert.deepEqual(parseAuthorization(scheme), { scheme: 'none' });
        },
      ),
    );
  });
});

// ---- hasMeSegment ---------------------------------------------------------------------------------

/** A path segment that is not `me` in any case and never decodes to it. */
const otherSegment = fc
  .oneof(
    fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@-]{0,12}$/),
    fc.constantFrom('mee', 'xme', 'MEE', 'Mex', 'm', 'e', 'm e', '%256De', '%6D', '%65', '%6De%', 'me%', '%', '%zz', '.', '..', ''),
  )
  .filter((segment) => segment.toLowerCase() !== 'me');
/** `me` in any case, plain or with any of its letters percent-encoded in any hex case. */
const meSegment = fc
  .tuple(fc.constantFrom('m', 'M', '%6d', '%6D', '%4d', '%4D'), fc.constantFrom('e', 'E', '%65', '%45'))
  .map(([m, e]) => m + e);

describe('hasMeSegment (properties)', () => {
  it('never throws', () => {
    check(
      fc.property(anyString(80), (path) => {
        assert.equal(typeof hasMeSegment(path), 'boolean');
      }),
    );
  });

  it('is true for a path with a `me` segment anywhere, in any case, however it is encoded, whatever the query', () => {
    check(
      fc.property(
        fc.array(otherSegment, { maxLength: 5 }),
        meSegment,
        fc.array(otherSegment, { maxLength: 5 }),
        anyString(30),
        (head, me, tail, query) => {
          const path = `/${[...head, me, ...tail].join('/')}`;
          assert.equal(hasMeSegment(path), true, path);
          assert.equal(hasMeSegment(`${path}?${query}`), true, path);
        },
      ),
    );
  });

  it('is false for a path none of whose segments is (or decodes to) `me`, whatever the query says', () => {
    check(
      fc.property(
        fc.array(otherSegment, { maxLength: 8 }),
        fc.oneof(anyString(30), fc.constant('/me'), fc.constant('x=/me/')),
        (segments, query) => {
          const path = `/${segments.join('/')}`;
          assert.equal(hasMeSegment(path), false, path);
          assert.equal(hasMeSegment(`${path}?${query}`), false, path);
        },
      ),
    );
  });

  it('ignores everything after the first "?"', () => {
    check(
      fc.property(
        anyString(40).map((path) => path.replaceAll('?', '')),
        anyString(40),
        (path, query) => {
          assert.equal(hasMeSegment(`${path}?${query}`), hasMeSegment(path));
        },
      ),
    );
  });
});

// ---- parseTokenRequest ----------------------------------------------------------------------------

const KNOWN_FIELDS = ['grant_type', 'client_id', 'client_secret', 'expiresAt', 'scope'];
const CANARY = 'canary7c1f';

const fieldValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  anyString(40),
  fc.constantFrom('client_credentials', '', `${CANARY}-secret`, '0', '-1', '1e3', ' 1', '9007199254740993', '1'.repeat(21)),
  fc.string({ minLength: MAX_CREDENTIAL_LENGTH - 2, maxLength: MAX_CREDENTIAL_LENGTH + 2 }),
  fc.double(),
  fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 1.5, undefined),
);
const fieldName = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...KNOWN_FIELDS) },
  fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', 'toString'),
  anyString(8),
);

/** Bodies as the parsers hand them over (JSON values, objects, forms) and some they never would. */
const anyBody: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.array(fc.tuple(fieldName, fieldValue), { maxLength: 6 }).map((entries) => Object.fromEntries(entries)),
  fc.array(fc.tuple(fieldName, fieldValue), { maxLength: 6 }).map((entries) => {
    const object = Object.create(null) as Record<string, unknown>;
    for (const [name, value] of entries) object[name] = value;
    return object;
  }),
  fc
    .array(
      fc.tuple(
        fieldName,
        // eslint-disable-next-line @typescript-eslint/no-base-to-string -- any value as URLSearchParams makes it a string, '[object Object]' too
        fieldValue.map((value) => (typeof value === 'string' ? value : String(value))),
      ),
      { maxLength: 6 },
    )
    .map((entries) => new URLSearchParams(entries)),
  fc.constantFrom(undefined, null, '', 'grant_type=client_credentials', 0, true, [], new Date(0), new Map(), Buffer.from('{}')),
);

function assertTokenRequest(parsed: TokenRequest): void {
  assert.deepEqual(Object.keys(parsed).sort(), ['clientId', 'clientSecret', 'expiresAt', 'scope']);
  // Kept as sent (a credential's token request reads it: parseScopeParameter), never an empty string.
  assert.notEqual(parsed.scope, '');
  for (const credential of [parsed.clientId, parsed.clientSecret]) {
    assert.ok(
      credential === undefined || (typeof credential === 'string' && credential.length >= 1 && credential.length <= MAX_CREDENTIAL_LENGTH),
    );
  }
  assert.ok(parsed.expiresAt === null || (Number.isSafeInteger(parsed.expiresAt) && parsed.expiresAt >= 0), String(parsed.expiresAt));
}

/** Calls the parser; returns the result or the error's code, failing on anything but a 400 TesseraError. */
function parse(body: unknown, grantTypeRequired: boolean): TokenRequest | string {
  try {
    const parsed = parseTokenRequest(body, { grantTypeRequired });
    assertTokenRequest(parsed);
    return parsed;
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    assert.ok(error instanceof TesseraError, `threw ${String(error)}`);
    assert.ok(['invalid_request', 'unsupported_grant_type'].includes(error.code), error.code);
    assert.equal(error.status, 400);
    assert.ok(!error.message.includes(CANARY), `the message echoes a sent value: ${error.message}`);
    return error.code;
  }
}

const credential = fc
  .string({ unit: codePoint, minLength: 1, maxLength: MAX_CREDENTIAL_LENGTH })
  .filter((value) => value.length <= MAX_CREDENTIAL_LENGTH);
const unknownFields = fc.array(
  fc.tuple(
    anyString(10).filter((name) => !KNOWN_FIELDS.includes(name)),
    fc.jsonValue({ maxDepth: 1 }),
  ),
  { maxLength: 4 },
);

describe('parseTokenRequest (properties)', () => {
  it('returns well-typed fields or throws a 400 TesseraError, nothing else, whatever the body', () => {
    check(
      fc.property(anyBody, fc.boolean(), (body, grantTypeRequired) => {
        parse(body, grantTypeRequired);
      }),
      5000,
    );
  });

  it('gives back valid fields, in JSON or a form, in any order, among unknown fields', () => {
    check(
      fc.property(
        credential,
        credential,
        fc.option(fc.maxSafeNat(), { nil: null }),
        unknownFields,
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        (clientId, clientSecret, expiresAt, unknown, form, sendGrantType, reverse) => {
          const fields: [string, unknown][] = [
            ['client_id', clientId],
            ['client_secret', clientSecret],
          ];
          if (sendGrantType) fields.push(['grant_type', 'client_credentials']);
          if (expiresAt !== null) fields.push(['expiresAt', form ? String(expiresAt) : expiresAt]);
          fields.push(...unknown.map(([name, value]): [string, unknown] => [name, form ? JSON.stringify(value) : value]));
          if (reverse) fields.reverse();
          const body = form
            ? new URLSearchParams(fields.map(([name, value]): [string, string] => [name, String(value)]))
            : Object.fromEntries(fields);
          assert.deepEqual(parseTokenRequest(body, { grantTypeRequired: sendGrantType }), {
            clientId,
            clientSecret,
            expiresAt,
            scope: undefined,
          });
        },
      ),
    );
  });

  it(`refuses a credential longer than ${MAX_CREDENTIAL_LENGTH} characters, and a repeated form field`, () => {
    check(
      fc.property(
        fc.constantFrom('client_id', 'client_secret'),
        fc
          .string({ unit: codePoint, minLength: MAX_CREDENTIAL_LENGTH / 2 + 1, maxLength: 1000 })
          .filter((value) => value.length > MAX_CREDENTIAL_LENGTH),
        fc.boolean(),
        (name, value, form) => {
          const fields = { grant_type: 'client_credentials', client_id: 'a', client_secret: 'b', [name]: value };
          assert.equal(parse(form ? new URLSearchParams(fields) : fields, true), 'invalid_request');
        },
      ),
      500,
    );
    check(
      fc.property(fc.constantFrom(...KNOWN_FIELDS), fc.string(), fc.string(), (name, first, second) => {
        const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'a', client_secret: 'b' });
        form.set(name, first);
        form.append(name, second);
        assert.equal(parse(form, true), 'invalid_request');
      }),
      500,
    );
  });

  it('takes expiresAt only as a non-negative safe integer: a JSON number, or a form decimal string', () => {
    const base = { grant_type: 'client_credentials', client_id: 'a', client_secret: 'b' };
    check(
      fc.property(fc.oneof(fc.double(), fc.integer(), fc.maxSafeInteger(), fc.constantFrom(2 ** 53, -(2 ** 53), 8.64e15, -0)), (value) => {
        const parsed = parse({ ...base, expiresAt: value }, true);
        const valid = Number.isSafeInteger(value) && value >= 0;
        if (valid) assert.ok(typeof parsed !== 'string' && parsed.expiresAt === value, `${value} -> ${JSON.stringify(parsed)}`);
        else assert.equal(parsed, 'invalid_request', String(value));
      }),
    );
    check(
      fc.property(fc.oneof(anyString(25), fc.bigInt({ min: -(10n ** 22n), max: 10n ** 22n }).map(String)), (text) => {
        fc.pre(text !== '');
        const parsed = parse(new URLSearchParams({ ...base, expiresAt: text }), true);
        const number = Number(text);
        const valid = /^-?[0-9]+$/.test(text) && Number.isSafeInteger(number) && number >= 0;
        // Over 20 digits (leading zeros) may be refused: no UNIX ms needs them.
        if (valid && text.length <= 20)
          assert.ok(typeof parsed !== 'string' && parsed.expiresAt === number, `${JSON.stringify(text)} -> ${JSON.stringify(parsed)}`);
        else if (!valid) assert.equal(parsed, 'invalid_request', JSON.stringify(text));
      }),
    );
    check(
      fc.property(fc.oneof(anyString(20), fc.integer().map(String)), (text) => {
        assert.equal(parse({ ...base, expiresAt: text }, true), 'invalid_request', 'a JSON string is not a number');
      }),
      500,
    );
  });

  it('refuses a grant_type other than client_credentials: unsupported if a string, invalid otherwise', () => {
    check(
      fc.property(fc.oneof(anyString(30), fc.jsonValue({ maxDepth: 1 })), fc.boolean(), (grantType, grantTypeRequired) => {
        fc.pre(grantType !== 'client_credentials');
        const result = parse({ grant_type: grantType, client_id: 'a', client_secret: 'b' }, grantTypeRequired);
        // RFC 6749 §3.2: a parameter without a value is treated as omitted.
        const omitted = grantType === null || grantType === '';
        const expected = omitted
          ? grantTypeRequired
            ? 'invalid_request'
            : 'parsed'
          : typeof grantType === 'string'
            ? 'unsupported_grant_type'
            : 'invalid_request';
        assert.equal(typeof result === 'string' ? result : 'parsed', expected, JSON.stringify(grantType));
      }),
    );
  });
});
