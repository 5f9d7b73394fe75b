import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardedAddresses } from '../../src/http/forwarded-for.js';

describe('forwardedAddresses', () => {
  it('keeps a header of IP addresses, trimmed', () => {
    assert.equal(forwardedAddresses('203.0.113.7'), '203.0.113.7');
    assert.equal(forwardedAddresses(' 203.0.113.7\t'), '203.0.113.7');
    assert.equal(forwardedAddresses('203.0.113.7, 2001:db8::1,10.0.0.2'), '203.0.113.7, 2001:db8::1, 10.0.0.2');
    assert.equal(forwardedAddresses('::ffff:203.0.113.7'), '::ffff:203.0.113.7');
  });

  it('keeps the entries right of the nearest one that is not an IP address', () => {
    assert.equal(forwardedAddresses('evil"<script>'), undefined);
    assert.equal(forwardedAddresses('203.0.113.7, evil'), undefined);
    assert.equal(forwardedAddresses('evil, 203.0.113.7'), '203.0.113.7');
    assert.equal(forwardedAddresses('198.51.100.1, evil, 203.0.113.7, 10.0.0.2'), '203.0.113.7, 10.0.0.2');
  });

  it('takes addresses with a port, brackets or a zone id, and obsolete spellings, for what they are: not addresses', () => {
    for (const entry of ['203.0.113.7:443', '[2001:db8::1]', '[2001:db8::1]:443', 'fe80::1%eth0', '203.0.113.007', 'unknown', '_hidden']) {
      assert.equal(forwardedAddresses(entry), undefined, entry);
      assert.equal(forwardedAddresses(`198.51.100.1, ${entry}`), undefined, entry);
    }
  });

  it('ignores empty list elements', () => {
    assert.equal(forwardedAddresses(''), undefined);
    assert.equal(forwardedAddresses(' , '), undefined);
    assert.equal(forwardedAddresses('203.0.113.7,, ,10.0.0.2,'), '203.0.113.7, 10.0.0.2');
  });
});
