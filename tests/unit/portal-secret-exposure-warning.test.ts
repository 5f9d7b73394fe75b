import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SecretExposure } from '../../src/apps/secret-exposure.js';
import { permissionsOf } from '../../src/developers/roles.js';
import { secretExposureWarnings } from '../../src/portal/pages/common/secret-exposure-warning.js';

// The warnings an app's pages show while one of its ClientSecrets is known to be in a web page.

const exposure: SecretExposure = {
  lastExposedAt: '2026-11-23T17:02:11.250Z',
  origin: 'https://shop.example',
  clientAddress: '203.0.113.9',
  secret: 'current',
  credential: null,
  rotatedAt: null,
  revoked: false,
  worksUntil: null,
};

const credentialExposure: SecretExposure = { ...exposure, credential: { clientId: 'tcl_0123456789abcdef01234567', name: 'CI <job>' } };

const textOf = (exposures: SecretExposure[], role?: 'owner' | 'collaborator') =>
  secretExposureWarnings('app1', exposures, role === undefined ? undefined : permissionsOf(role))!.text;

describe('secretExposureWarnings', () => {
  it('is nothing without an exposure, once the secret was rotated after it with no grace left, or once its credential was revoked', () => {
    assert.equal(secretExposureWarnings('app1', []), null);
    assert.equal(secretExposureWarnings('app1', [{ ...exposure, rotatedAt: '2026-11-23T18:00:00.000Z' }]), null);
    assert.equal(secretExposureWarnings('app1', [{ ...credentialExposure, rotatedAt: '2026-11-23T18:00:00.000Z', revoked: true }]), null);
  });

  it('says when, from which page and address, and links the owner to the rotate form', () => {
    const text = textOf([exposure], 'owner');
    assert.match(text, /<h2 id="secret-exposed-heading">The ClientSecret has leaked into a web page<\/h2>/);
    assert.match(text, /<time datetime="2026-11-23T17:02:11.250Z">2026-11-23 17:02:11 UTC<\/time>/);
    assert.match(text, /<code>https:\/\/shop\.example<\/code>/);
    assert.match(text, /<code>203\.0\.113\.9<\/code>/);
    assert.match(text, /<strong><a href="\/portal\/apps\/app1\/rotate-secret">Rotate the ClientSecret<\/a><\/strong>/);
  });

  it('asks a collaborator to ask the owner, who alone may rotate it', () => {
    const text = textOf([exposure], 'collaborator');
    assert.match(text, /Ask the app's owner to rotate the ClientSecret/);
    assert.doesNotMatch(text, /rotate-secret/, 'no link to a form a collaborator may not open');
  });

  it("names a credential's leaked secret as the credential's, and leads to revoking or rotating it, not to the app's rotation", () => {
    const text = textOf([credentialExposure], 'collaborator');
    assert.match(text, /The ClientSecret of the credential <q>CI &lt;job&gt;<\/q> has leaked into a web page/);
    assert.match(text, /href="\/portal\/apps\/app1\/credentials\/tcl_0123456789abcdef01234567\/revoke">Revoke the credential/);
    assert.match(text, /Rotating the app's own ClientSecret does not end this one/);
    assert.doesNotMatch(text, /rotate-secret/);
  });

  it('while a rotation keeps the leaked secret working for a grace period, says until when and leads to ending it', () => {
    const inGrace = { ...exposure, rotatedAt: '2026-11-23T18:00:00.000Z', worksUntil: '2026-11-24T18:00:00.000Z' };
    const text = textOf([inGrace], 'owner');
    assert.match(text, /the leaked secret still works until <time datetime="2026-11-24T18:00:00.000Z">/);
    assert.match(text, /href="\/portal\/apps\/app1\/rotate-secret#end-previous-secret">End the grace period now/);
  });

  it('shows one warning for each secret still leaked, with headings of their own', () => {
    const text = textOf([credentialExposure, exposure], 'owner');
    assert.equal(text.match(/data-warning="secret-exposed"/g)?.length, 2);
    assert.match(text, /id="secret-exposed-heading"/);
    assert.match(text, /id="secret-exposed-heading-2"/);
  });

  it('escapes what it shows, and says less when the origin and address are unknown', () => {
    const text = textOf([{ ...exposure, origin: '<b>x</b>', clientAddress: null, secret: 'previous' }]);
    assert.match(text, /<code>&lt;b&gt;x&lt;\/b&gt;<\/code>/);
    assert.match(text, /with the previous ClientSecret/);
    assert.doesNotMatch(text, /address/);
    assert.match(textOf([{ ...exposure, origin: null, clientAddress: null }]), /with its ClientSecret\. Tessera refused it/);
  });
});
