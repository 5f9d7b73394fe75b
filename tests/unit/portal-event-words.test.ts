import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditEvent } from '../../src/events/event.js';
import { detailsOf, whoOf } from '../../src/portal/pages/events/words.js';

// Who did what, in the events page's words, where a credential is concerned (issue 36).

const event = (overrides: Partial<AuditEvent>): AuditEvent => ({
  id: 1,
  appId: 'app1',
  type: 'token.issued',
  at: Date.parse('2026-11-28T09:00:00Z'),
  principal: 'admin',
  clientAddress: '203.0.113.9',
  details: {},
  ...overrides,
});

const CREDENTIAL = { clientId: 'tcl_0123456789abcdef01234567', name: 'CI job' };

describe('whoOf, for credentials', () => {
  it("says a credential's right secret refused (its expiry, its addresses) was sent by a holder of that secret, not by someone without valid credentials", () => {
    const refused = event({ type: 'credential.refused', principal: null, details: { ...CREDENTIAL, reason: 'address_not_allowed' } });
    assert.equal(whoOf(refused, new Map()), 'someone with the ClientSecret of \u201cCI job\u201d (tcl_0123456789abcdef01234567)');
  });

  it("names the credential a token was issued to, rather than the admin, and its secret as the credential's", () => {
    const issued = event({ details: { expiresAt: null, secret: 'current', clientId: CREDENTIAL.clientId, scopes: ['events:read'] } });
    assert.equal(whoOf(issued, new Map()), 'the credential tcl_0123456789abcdef01234567');
    assert.ok(detailsOf(issued, new Map()).includes('with the current secret'));
    assert.equal(whoOf(event({ details: { expiresAt: null, secret: 'current' } }), new Map()), 'the admin (ClientSecret or admin token)');
  });

  it('names the credential whose admin token made a change', () => {
    const created = event({ type: 'credential.created', details: { ...CREDENTIAL, byClientId: 'tcl_ffffffffffffffffffffffff' } });
    assert.equal(whoOf(created, new Map()), 'an admin token of the credential tcl_ffffffffffffffffffffffff');
  });

  it('still says someone without valid credentials of a wrong secret', () => {
    const refused = event({ type: 'token.refused', principal: null, details: { reason: 'invalid_client', attempted: 'admin' } });
    assert.equal(whoOf(refused, new Map()), 'someone without valid credentials');
  });
});
