import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SecretExposure } from '../../src/apps/secret-exposure.js';
import { secretExposureWarning } from '../../src/portal/pages/secret-exposure-warning.js';

// The warning an app's pages show while its ClientSecret is known to be in a web page.

const exposure: SecretExposure = {
  lastExposedAt: '2026-11-23T17:02:11.250Z',
  origin: 'https://shop.example',
  clientAddress: '203.0.113.9',
  secret: 'current',
  rotatedAt: null,
};

describe('secretExposureWarning', () => {
  it('is nothing without an exposure, or once the secret was rotated after it', () => {
    assert.equal(secretExposureWarning('app1', null), null);
    assert.equal(secretExposureWarning('app1', { ...exposure, rotatedAt: '2026-11-23T18:00:00.000Z' }), null);
  });

  it('says when, from which page and address, and links the owner to the rotate form', () => {
    const text = secretExposureWarning('app1', exposure, 'owner')!.text;
    assert.match(text, /<h2 id="secret-exposed-heading">The ClientSecret has leaked into a web page<\/h2>/);
    assert.match(text, /<time datetime="2026-11-23T17:02:11.250Z">2026-11-23 17:02:11 UTC<\/time>/);
    assert.match(text, /<code>https:\/\/shop\.example<\/code>/);
    assert.match(text, /<code>203\.0\.113\.9<\/code>/);
    assert.match(text, /<strong><a href="\/portal\/apps\/app1\/rotate-secret">Rotate the ClientSecret<\/a><\/strong>/);
  });

  it('asks a collaborator to ask the owner, who alone may rotate it', () => {
    const text = secretExposureWarning('app1', exposure, 'collaborator')!.text;
    assert.match(text, /Ask the app's owner to rotate the ClientSecret/);
    assert.doesNotMatch(text, /rotate-secret/, 'no link to a form a collaborator may not open');
  });

  it('escapes what it shows, and says less when the origin and address are unknown', () => {
    const text = secretExposureWarning('app1', { ...exposure, origin: '<b>x</b>', clientAddress: null, secret: 'previous' })!.text;
    assert.match(text, /<code>&lt;b&gt;x&lt;\/b&gt;<\/code>/);
    assert.match(text, /with the previous ClientSecret/);
    assert.doesNotMatch(text, /address/);
    assert.match(
      secretExposureWarning('app1', { ...exposure, origin: null, clientAddress: null })!.text,
      /with its ClientSecret\. Tessera refused it/,
    );
  });
});
