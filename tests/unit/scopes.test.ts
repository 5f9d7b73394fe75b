import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUILT_IN_SCOPES, checkScopes, isBuiltInScope, MAX_SCOPES, narrowScopes } from 'tessera-tokens/internal/credentials/scopes.js';

describe("checkScopes: a credential's scopes", () => {
  it("takes the built-in scopes and an app's own, sorted, each once", () => {
    assert.deepEqual(checkScopes(['tokens:revoke', 'orders.read', 'app:read', 'orders.read', 'billing:write-all_2']), {
      scopes: ['app:read', 'billing:write-all_2', 'orders.read', 'tokens:revoke'],
    });
    assert.deepEqual(checkScopes([...BUILT_IN_SCOPES]), { scopes: [...BUILT_IN_SCOPES].sort() });
    assert.deepEqual(checkScopes([]), { scopes: [] });
  });

  it('refuses a malformed name: upper case, a leading digit or sign, a space, a control character, over 64 characters', () => {
    for (const scope of [
      'Orders',
      '1orders',
      '-orders',
      ':read',
      'orders read',
      'orders\u0000',
      'orders\n',
      '',
      'ordérs',
      'a'.repeat(65),
    ]) {
      assert.deepEqual(checkScopes([scope]), { problem: { kind: 'malformed', scope } }, JSON.stringify(scope));
    }
    assert.deepEqual(checkScopes(['a'.repeat(64)]), { scopes: ['a'.repeat(64)] });
  });

  it('refuses a name in a built-in namespace that is not built in, as unknown', () => {
    for (const scope of ['tokens:delete', 'app:write', 'configuration:', 'credentials:read', 'events:write']) {
      assert.deepEqual(checkScopes([scope]), { problem: { kind: 'unknown', scope } }, scope);
    }
    assert.deepEqual(
      checkScopes(['tokens.delete', 'apps:read']),
      { scopes: ['apps:read', 'tokens.delete'] },
      "other namespaces are the app's",
    );
  });

  it('refuses more than MAX_SCOPES different scopes', () => {
    const many = Array.from({ length: MAX_SCOPES + 1 }, (_, index) => `s${index}`);
    assert.deepEqual(checkScopes(many), { problem: { kind: 'too many', count: MAX_SCOPES + 1 } });
    assert.ok('scopes' in checkScopes(many.slice(1)));
  });

  it("tells built-in scopes from an app's own", () => {
    assert.equal(isBuiltInScope('events:read'), true);
    assert.equal(isBuiltInScope('orders.read'), false);
  });
});

describe("narrowScopes: a token request's scope parameter", () => {
  const allowed = ['app:read', 'events:read', 'orders.read'];

  it('gives every scope of the credential when the request names none', () => {
    assert.deepEqual(narrowScopes(allowed, undefined), { scopes: allowed });
  });

  it('gives what is asked for when the credential has it', () => {
    assert.deepEqual(narrowScopes(allowed, 'orders.read events:read'), { scopes: ['events:read', 'orders.read'] });
    assert.deepEqual(narrowScopes(allowed, 'app:read app:read'), { scopes: ['app:read'] });
  });

  it('refuses more than the credential allows, and malformed or unknown names', () => {
    assert.deepEqual(narrowScopes(allowed, 'app:read tokens:revoke'), { problem: { kind: 'not allowed', scope: 'tokens:revoke' } });
    assert.deepEqual(narrowScopes(allowed, 'app:read  events:read'), { problem: { kind: 'malformed', scope: '' } }, 'two spaces');
    assert.deepEqual(narrowScopes(allowed, ''), { problem: { kind: 'malformed', scope: '' } });
    assert.deepEqual(narrowScopes(allowed, 'tokens:delete'), { problem: { kind: 'unknown', scope: 'tokens:delete' } });
    const many = Array.from({ length: MAX_SCOPES + 1 }, () => 'app:read').join(' ');
    assert.deepEqual(narrowScopes(allowed, many), { problem: { kind: 'too many', count: MAX_SCOPES + 1 } });
  });
});
