import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressKey } from '../../src/limits/address-key.js';

describe('addressKey', () => {
  it('keeps an IPv4 address as it is', () => {
    for (const address of ['127.0.0.1', '203.0.113.7', '0.0.0.0', '255.255.255.255']) assert.equal(addressKey(address), address);
  });

  it('takes an IPv6 address by its /64, however it is written', () => {
    const cases: Array<[string, string]> = [
      ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
      ['2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
      ['2001:db8:1:2::', '2001:db8:1:2::/64'],
      ['2001:db8::1', '2001:db8:0:0::/64'],
      ['2001:db8:0:0:1::', '2001:db8:0:0::/64'],
      ['::', '0:0:0:0::/64'],
      ['::1', '0:0:0:0::/64'],
      ['fe80::1%eth0', 'fe80:0:0:0::/64'],
      ['FE80::ABCD%25', 'fe80:0:0:0::/64'],
      ['1:2:3:4:5:6:192.0.2.1', '1:2:3:4::/64'],
      ['1:2:3::192.0.2.1', '1:2:3:0::/64'],
      ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
      ['1::', '1:0:0:0::/64'],
      ['::2:3:4:5', '0:0:0:0::/64'],
      ['::a:b:c:d:e:f:1', '0:a:b:c::/64'],
      ['1:2:3:4:5:6:7::', '1:2:3:4::/64'],
      ['1:2::3:4', '1:2:0:0::/64'],
      ['a::b:c:d:e:f', 'a:0:0:b::/64'],
    ];
    for (const [address, key] of cases) assert.equal(addressKey(address), key, address);
  });

  it('takes an IPv4-mapped IPv6 address as the IPv4 address', () => {
    const cases: Array<[string, string]> = [
      ['::ffff:192.0.2.1', '192.0.2.1'],
      ['::FFFF:192.0.2.1', '192.0.2.1'],
      ['0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1'],
      ['::ffff:c000:0201', '192.0.2.1'],
      ['::ffff:0:0', '0.0.0.0'],
      ['::ffff:ffff:ffff', '255.255.255.255'],
    ];
    for (const [address, key] of cases) assert.equal(addressKey(address), key, address);
    // Not mapped: IPv4-compatible (deprecated) and IPv4-translated addresses are IPv6 addresses.
    assert.equal(addressKey('::192.0.2.1'), '0:0:0:0::/64');
    assert.equal(addressKey('::ffff:0:192.0.2.1'), '0:0:0:0::/64');
  });

  it('keeps anything that is not an address as it is', () => {
    for (const text of ['', 'not-an-address', '1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', '::ffff:1.2.3', '[::1]']) {
      assert.equal(addressKey(text), text);
    }
  });
});
