import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TesseraError, type ErrorCode } from 'tessera-tokens/internal/errors.js';
import { MAX_CREDENTIAL_LENGTH, parseScopeParameter, parseTokenRequest } from '../../src/tokens/request.js';

const REQUIRED = { grantTypeRequired: true };
const OPTIONAL = { grantTypeRequired: false };
const BASE = { grant_type: 'client_credentials', client_id: 'id', client_secret: 'secret' };

function form(fields: Record<string, string> | [string, string][] | string): URLSearchParams {
  return new URLSearchParams(fields);
}

function rejects(body: unknown, code: ErrorCode, options = REQUIRED): void {
  assert.throws(
    () => parseTokenRequest(body, options),
    (error: unknown) => {
      assert.ok(error instanceof TesseraError, `expected a TesseraError, got ${String(error)}`);
      assert.equal(error.code, code);
      return true;
    },
  );
}

describe('parseTokenRequest: JSON object', () => {
  it('reads the three fields and a numeric expiresAt', () => {
    assert.deepEqual(parseTokenRequest({ ...BASE, expiresAt: 1_780_000_000_000 }, REQUIRED), {
      clientId: 'id',
      clientSecret: 'secret',
      expiresAt: 1_780_000_000_000,
      scope: undefined,
    });
  });

  it('has expiresAt null when it is absent or null', () => {
    assert.equal(parseTokenRequest(BASE, REQUIRED).expiresAt, null);
    assert.equal(parseTokenRequest({ ...BASE, expiresAt: null }, REQUIRED).expiresAt, null);
  });

  it("accepts expiresAt 0 and the largest safe integer (the range check is the expiry rules' job)", () => {
    assert.equal(parseTokenRequest({ ...BASE, expiresAt: 0 }, REQUIRED).expiresAt, 0);
    assert.equal(parseTokenRequest({ ...BASE, expiresAt: Number.MAX_SAFE_INTEGER }, REQUIRED).expiresAt, Number.MAX_SAFE_INTEGER);
  });

  it('refuses an expiresAt that is not a non-negative safe integer', () => {
    for (const expiresAt of [1.5, -1, 1e300, Number.MAX_SAFE_INTEGER + 1, Infinity, NaN]) {
      rejects({ ...BASE, expiresAt }, 'invalid_request');
    }
  });

  it('refuses an expiresAt of another type: a JSON body must send a number', () => {
    for (const expiresAt of ['123', '', true, [123], { at: 123 }]) {
      rejects({ ...BASE, expiresAt }, 'invalid_request');
    }
  });

  it('refuses a missing grant_type when it is required, and accepts it when it is not', () => {
    rejects({ client_id: 'id', client_secret: 'secret' }, 'invalid_request');
    assert.deepEqual(parseTokenRequest({ client_id: 'id', client_secret: 'secret' }, OPTIONAL), {
      clientId: 'id',
      clientSecret: 'secret',
      expiresAt: null,
      scope: undefined,
    });
  });

  it('refuses a grant_type that is not a string, required or not', () => {
    for (const grantType of [1, true, ['client_credentials'], { a: 1 }]) {
      rejects({ ...BASE, grant_type: grantType }, 'invalid_request');
      rejects({ ...BASE, grant_type: grantType }, 'invalid_request', OPTIONAL);
    }
  });

  it('answers unsupported_grant_type for any other grant type, required or not', () => {
    for (const grantType of ['password', 'authorization_code', 'CLIENT_CREDENTIALS', 'client_credentials ']) {
      rejects({ ...BASE, grant_type: grantType }, 'unsupported_grant_type');
      rejects({ ...BASE, grant_type: grantType }, 'unsupported_grant_type', OPTIONAL);
    }
  });

  it('leaves missing, null or empty credentials undefined (they may come from a Basic header)', () => {
    for (const value of [undefined, null, '']) {
      const body: Record<string, unknown> = { grant_type: 'client_credentials' };
      if (value !== undefined) Object.assign(body, { client_id: value, client_secret: value });
      const parsed = parseTokenRequest(body, REQUIRED);
      assert.equal(parsed.clientId, undefined);
      assert.equal(parsed.clientSecret, undefined);
    }
  });

  it('refuses a credential that is not a string', () => {
    for (const value of [123, 0, false, ['id'], { id: 'x' }]) {
      rejects({ ...BASE, client_id: value }, 'invalid_request');
      rejects({ ...BASE, client_secret: value }, 'invalid_request');
    }
  });

  it(`accepts a credential of ${MAX_CREDENTIAL_LENGTH} characters and refuses a longer one`, () => {
    const longest = 'x'.repeat(MAX_CREDENTIAL_LENGTH);
    assert.deepEqual(parseTokenRequest({ ...BASE, client_id: longest, client_secret: longest }, REQUIRED), {
      clientId: longest,
      clientSecret: longest,
      expiresAt: null,
      scope: undefined,
    });
    rejects({ ...BASE, client_id: `${longest}x` }, 'invalid_request');
    rejects({ ...BASE, client_secret: `${longest}x` }, 'invalid_request');
  });

  it('ignores unknown fields, and reads scope as sent (RFC 6749 section 3.3)', () => {
    assert.deepEqual(parseTokenRequest({ ...BASE, scope: 'events:read reports', extra: { nested: [1] }, expires_in: 'x' }, REQUIRED), {
      clientId: 'id',
      clientSecret: 'secret',
      expiresAt: null,
      scope: 'events:read reports',
    });
  });

  it('reads scope for a credential: a string no longer than 32 scopes can be, else invalid_scope', () => {
    assert.equal(parseTokenRequest({ ...BASE, scope: '' }, REQUIRED).scope, undefined, 'an empty parameter is omitted');
    for (const scope of [['events:read'], 7, 'a'.repeat(32 * 65 + 1)]) {
      assert.equal(parseTokenRequest({ ...BASE, scope }, REQUIRED).scope, scope, 'kept as sent: only a credential reads it');
      assert.throws(() => parseScopeParameter(scope), { code: 'invalid_scope' });
    }
    assert.equal(parseScopeParameter('events:read reports'), 'events:read reports');
  });

  it('reads own fields only, never inherited ones', () => {
    const inherited = Object.create({ grant_type: 'password', client_id: 'evil', expiresAt: 'bad' }) as object;
    assert.deepEqual(parseTokenRequest(Object.assign(inherited, { client_secret: 's' }), OPTIONAL), {
      clientId: undefined,
      clientSecret: 's',
      expiresAt: null,
      scope: undefined,
    });
    const parsed = JSON.parse('{"client_id":"id","client_secret":"s","__proto__":{"grant_type":"x","expiresAt":5}}') as unknown;
    assert.deepEqual(parseTokenRequest(parsed, OPTIONAL), { clientId: 'id', clientSecret: 's', expiresAt: null, scope: undefined });
  });

  it('refuses a body that is not a JSON object', () => {
    for (const body of [undefined, null, [], [BASE], 'grant_type=client_credentials', 42, true]) {
      rejects(body, 'invalid_request');
      rejects(body, 'invalid_request', OPTIONAL);
    }
  });
});

describe('parseTokenRequest: form (URLSearchParams)', () => {
  it('reads the fields, and expiresAt as a decimal string', () => {
    assert.deepEqual(parseTokenRequest(form({ ...BASE, expiresAt: '1780000000000' }), REQUIRED), {
      clientId: 'id',
      clientSecret: 'secret',
      expiresAt: 1_780_000_000_000,
      scope: undefined,
    });
    assert.equal(parseTokenRequest(form({ ...BASE, expiresAt: '123' }), REQUIRED).expiresAt, 123);
  });

  it('has expiresAt null when it is absent or empty (RFC 6749 §3.2: a parameter without a value is omitted)', () => {
    assert.equal(parseTokenRequest(form(BASE), REQUIRED).expiresAt, null);
    assert.equal(parseTokenRequest(form({ ...BASE, expiresAt: '' }), REQUIRED).expiresAt, null);
  });

  it('refuses an expiresAt that is not a non-negative integer in decimal', () => {
    for (const expiresAt of ['1.5', 'abc', '-1', '1e3', '0x10', ' 123', '123 ', '+123', '9007199254740993', '1'.repeat(21)]) {
      rejects(form({ ...BASE, expiresAt }), 'invalid_request');
    }
  });

  it('leaves empty credentials undefined (client_secret_basic sends none in the body)', () => {
    assert.deepEqual(parseTokenRequest(form('grant_type=client_credentials'), REQUIRED), {
      clientId: undefined,
      clientSecret: undefined,
      expiresAt: null,
      scope: undefined,
    });
    assert.deepEqual(parseTokenRequest(form('grant_type=client_credentials&client_id=&client_secret='), REQUIRED), {
      clientId: undefined,
      clientSecret: undefined,
      expiresAt: null,
      scope: undefined,
    });
  });

  it('refuses a missing grant_type when it is required', () => {
    rejects(form({ client_id: 'id', client_secret: 'secret' }), 'invalid_request');
  });

  it('treats an empty grant_type as a missing one (RFC 6749 §3.2)', () => {
    rejects(form({ ...BASE, grant_type: '' }), 'invalid_request');
    assert.equal(parseTokenRequest(form({ ...BASE, grant_type: '' }), OPTIONAL).clientId, 'id');
  });

  it('answers unsupported_grant_type for another grant type', () => {
    rejects(form({ ...BASE, grant_type: 'password' }), 'unsupported_grant_type');
  });

  it(`refuses a credential longer than ${MAX_CREDENTIAL_LENGTH} characters`, () => {
    rejects(form({ ...BASE, client_secret: 'x'.repeat(MAX_CREDENTIAL_LENGTH + 1) }), 'invalid_request');
  });

  it('refuses a repeated field, even with the same value (RFC 6749 §3.2)', () => {
    for (const name of ['grant_type', 'client_id', 'client_secret', 'expiresAt', 'scope']) {
      const value = name === 'expiresAt' ? '123' : name === 'scope' ? 'events:read' : (BASE as Record<string, string>)[name]!;
      const pairs: [string, string][] = [...Object.entries(BASE), ['expiresAt', '123'], ['scope', 'events:read'], [name, value]];
      rejects(form(pairs), 'invalid_request');
    }
  });

  it('ignores unknown fields', () => {
    assert.deepEqual(parseTokenRequest(form({ ...BASE, scope: 'x', disable_cache: '1' }), REQUIRED), {
      clientId: 'id',
      clientSecret: 'secret',
      expiresAt: null,
      scope: 'x',
    });
  });
});
