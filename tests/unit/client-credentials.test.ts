import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAuthorization } from 'tessera-tokens/internal/tokens/authorization-header.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { clientCredentials, type BodyCredentials } from '../../src/tokens/client-credentials.js';
import { makeApp } from '../helpers/fixtures.js';

const app = makeApp();
const basic = (user: string, password: string) => parseAuthorization(`Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`);
const body = (clientId?: string, clientSecret?: string): BodyCredentials => ({ clientId, clientSecret });

function refusedWith(code: string, message?: RegExp) {
  return (error: unknown) => error instanceof TesseraError && error.code === code && (message === undefined || message.test(error.message));
}

describe('clientCredentials', () => {
  it('reads the body when the Basic user is the AppID (the seed), or there is no Basic header (client_secret_post)', () => {
    for (const authorization of [basic(app.appId, 'anything'), parseAuthorization(undefined), parseAuthorization('Bearer x')]) {
      assert.deepEqual(clientCredentials(app, authorization, body('id', 'secret')), { clientId: 'id', clientSecret: 'secret' });
    }
  });

  it('needs client_id and client_secret in the body then', () => {
    assert.throws(() => clientCredentials(app, basic(app.appId, 'x'), body(undefined, 's')), refusedWith('invalid_request', /client_id/));
    assert.throws(
      () => clientCredentials(app, basic(app.appId, 'x'), body('i', undefined)),
      refusedWith('invalid_request', /client_secret/),
    );
    assert.throws(
      () => clientCredentials(app, parseAuthorization(undefined), body('i', undefined)),
      refusedWith('invalid_request', /client_secret/),
    );
  });

  it('has none without a Basic header and without credentials in the body', () => {
    assert.equal(clientCredentials(app, parseAuthorization(undefined), body()), undefined);
    assert.equal(clientCredentials(app, parseAuthorization('Bearer x'), body()), undefined);
  });

  it('reads Basic AppID:AppKey with nothing in the body as the anonymous client (client_secret_basic)', () => {
    assert.deepEqual(clientCredentials(app, basic(app.appId, app.appKey), body()), { clientId: app.appId, clientSecret: app.appKey });
    assert.throws(() => clientCredentials(app, basic(app.appId, ''), body()), refusedWith('invalid_request', /AppKey/));
  });

  it('reads RFC 6749 client_secret_basic, form-decoded, as the credentials', () => {
    assert.deepEqual(clientCredentials(app, basic('my%20client', 'a+b%2Bc'), body()), { clientId: 'my client', clientSecret: 'a b+c' });
  });

  it('allows body credentials that agree with the header, and refuses those that do not: 400 invalid_request (RFC 6749 §2.3)', () => {
    assert.deepEqual(clientCredentials(app, basic('c', 's'), body('c', 's')), { clientId: 'c', clientSecret: 's' });
    assert.deepEqual(clientCredentials(app, basic('c', 's'), body('c', undefined)), { clientId: 'c', clientSecret: 's' });
    assert.throws(() => clientCredentials(app, basic('c', 's'), body('other', undefined)), refusedWith('invalid_request', /differ/));
    assert.throws(() => clientCredentials(app, basic('c', 's'), body(undefined, 'other')), refusedWith('invalid_request', /differ/));
    assert.throws(() => clientCredentials(app, basic('c', 's'), body(app.appId, app.appKey)), refusedWith('invalid_request', /differ/));
  });
});
