import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAuthorization } from '../../src/auth/authorization.js';
import { TesseraError } from '../../src/errors.js';
import { tokenRequestCredentials } from '../../src/tokens/credentials.js';
import type { TokenRequest } from '../../src/tokens/request.js';
import { makeApp } from '../helpers/fixtures.js';

const app = makeApp();
const basic = (user: string, password: string) => parseAuthorization(`Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`);
const body = (clientId?: string, clientSecret?: string): TokenRequest => ({ clientId, clientSecret, expiresAt: null });

function refusedWith(code: string) {
  return (error: unknown) => error instanceof TesseraError && error.code === code;
}

describe('tokenRequestCredentials', () => {
  it('reads the body when the Basic user is the AppID, or there is no Basic header', () => {
    for (const authorization of [basic(app.appId, 'anything'), parseAuthorization(undefined), parseAuthorization('Bearer x')]) {
      assert.deepEqual(tokenRequestCredentials(app, authorization, body('id', 'secret')), { clientId: 'id', clientSecret: 'secret' });
    }
  });

  it('needs client_id and client_secret in the body then', () => {
    assert.throws(() => tokenRequestCredentials(app, basic(app.appId, 'x'), body(undefined, 's')), refusedWith('invalid_request'));
    assert.throws(() => tokenRequestCredentials(app, basic(app.appId, 'x'), body('i', undefined)), refusedWith('invalid_request'));
  });

  it('reads RFC 6749 client_secret_basic, form-decoded, as the credentials', () => {
    assert.deepEqual(tokenRequestCredentials(app, basic('my%20client', 'a+b%2Bc'), body()), { clientId: 'my client', clientSecret: 'a b+c' });
  });

  it('allows body credentials that agree with the header, and refuses those that do not', () => {
    assert.deepEqual(tokenRequestCredentials(app, basic('c', 's'), body('c', 's')), { clientId: 'c', clientSecret: 's' });
    assert.throws(() => tokenRequestCredentials(app, basic('c', 's'), body('other', undefined)), refusedWith('invalid_client'));
    assert.throws(() => tokenRequestCredentials(app, basic('c', 's'), body(undefined, 'other')), refusedWith('invalid_client'));
  });
});
