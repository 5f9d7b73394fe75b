import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import { addressAllowed, MAX_ALLOWED_ADDRESSES, parseAddressList } from '../../src/credentials/addresses.js';
import type { CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';
import { parseNewCredential } from '../../src/credentials/input.js';
import type { EventLog } from '../../src/events/log.js';
import type { RateLimits } from '../../src/limits/rate-limits.js';
import { AdminAuthentication } from '../../src/tokens/client-authentication.js';
import { FakeClock } from '../helpers/clock.js';
import { makeApp, T0 } from '../helpers/fixtures.js';

describe('parseAddressList', () => {
  it('takes IPv4 and IPv6 CIDRs and single addresses, canonical, in order, without repeats', () => {
    assert.deepEqual(parseAddressList(['203.0.113.0/24', '192.0.2.7', '2001:DB8:0:0::/32', '::1', '203.0.113.0/24', '0.0.0.0/0']), {
      cidrs: ['203.0.113.0/24', '192.0.2.7/32', '2001:db8::/32', '::1/128', '0.0.0.0/0'],
    });
    assert.deepEqual(parseAddressList([]), { cidrs: [] });
  });

  it('refuses what is not a CIDR, and bits set past the prefix, rather than guess', () => {
    for (const entry of [
      '10.0.0.1/8',
      '2001:db8::1/32',
      '300.0.0.0/8',
      '10.0.0.0/33',
      '::/129',
      '010.0.0.0/8',
      '10.0.0.0/08',
      '10.0.0.0/',
      'localhost',
      '',
      ' 10.0.0.0/8',
      '10.0.0.0/8 ',
      'fe80::1%eth0',
      `${'1'.repeat(60)}`,
    ]) {
      assert.deepEqual(parseAddressList([entry]), { problem: entry }, entry);
    }
    assert.ok('problem' in parseAddressList(Array.from({ length: MAX_ALLOWED_ADDRESSES + 1 }, (_, i) => `10.0.${i}.0/24`)));
  });
});

describe('addressAllowed', () => {
  const list = ['203.0.113.0/24', '2001:db8::/32'];

  it('allows the addresses on the list, and nothing else; an empty list allows any address', () => {
    assert.equal(addressAllowed(list, '203.0.113.250'), true);
    assert.equal(addressAllowed(list, '203.0.114.1'), false);
    assert.equal(addressAllowed(list, '2001:db8:ffff::1'), true);
    assert.equal(addressAllowed(list, '2001:db9::1'), false);
    assert.equal(addressAllowed(list, null), false, 'the CLI has no address: it never authenticates a credential anyway');
    assert.equal(addressAllowed(list, 'not an address'), false);
    assert.equal(addressAllowed([], '198.51.100.1'), true);
    assert.equal(addressAllowed([], null), true);
  });

  it('checks an IPv4 client that a dual-stack socket reports as IPv6 as IPv4', () => {
    assert.equal(addressAllowed(list, '::ffff:203.0.113.9'), true);
    assert.equal(addressAllowed(list, '::FFFF:198.51.100.1'), false);
  });
});

describe('parseNewCredential', () => {
  const now = T0;
  const valid = { name: '  CI reader ', scopes: ['reports:read', 'events:read', 'events:read'] };

  it('trims the name, sorts the scopes without repeats, reads RFC 3339 with an offset', () => {
    assert.deepEqual(parseNewCredential({ ...valid, expiresAt: '2030-01-01T02:00:00+02:00', allowFrom: ['::1'] }, now), {
      name: 'CI reader',
      scopes: ['events:read', 'reports:read'],
      expiresAt: Date.parse('2030-01-01T00:00:00Z'),
      allowFrom: ['::1/128'],
      accessTokenFormat: null,
    });
    assert.equal(parseNewCredential({ ...valid, expiresAt: null }, now).expiresAt, null);
    assert.equal(parseNewCredential({ ...valid, accessTokenFormat: 'jwt' }, now).accessTokenFormat, 'jwt');
  });

  it('names the field of the first problem', () => {
    const field = (fields: Record<string, unknown>) => {
      try {
        parseNewCredential(fields, now);
      } catch (error) {
        return (error as Error).message.split(' ')[0];
      }
      return 'accepted';
    };
    assert.equal(field({ ...valid, name: 42 }), 'name');
    assert.equal(field({ ...valid, name: '\u202ereversed' }), 'name');
    assert.equal(field({ ...valid, scopes: 'events:read' }), 'scopes');
    assert.equal(field({ ...valid, scopes: ['credentials:delete'] }), 'scopes');
    assert.equal(field({ ...valid, expiresAt: new Date(now).toISOString() }), 'expiresAt', 'an expiry must be after now');
    assert.equal(field({ ...valid, expiresAt: 1_900_000_000_000 }), 'expiresAt');
    assert.equal(field({ ...valid, expiresAt: '2030-02-30T00:00:00Z' }), 'accepted', 'Date.parse rolls it over, as RFC 3339 readers do');
    assert.equal(field({ ...valid, allowFrom: [42] }), 'allowFrom');
    assert.equal(field({ ...valid, accessTokenFormat: 'paseto' }), 'accessTokenFormat');
  });
});

describe("a credential's refusals do the same work", () => {
  const secret = 'tessera_' + 's'.repeat(49);
  const app = makeApp();
  const credential: CredentialRecord = {
    clientId: 'tcl_0123456789abcdef01234567',
    appId: app.appId,
    name: 'timed',
    scopes: ['events:read'],
    expiresAt: T0 + 60_000,
    allowFrom: ['203.0.113.0/24'],
    secretHash: clientSecretDigest(secret),
    previousSecret: null,
    createdAt: T0,
    createdBy: { kind: 'operator' },
    lastUsedAt: null,
    accessTokenFormat: null,
  };
  const withCredential = { ...app, credentials: [credential] as const };

  it('a wrong secret, an expired credential and an address not on the list take the same time, within noise', () => {
    const clock = new FakeClock();
    const admins = new AdminAuthentication({} as RateLimits, {} as EventLog, clock);
    const wrong = { clientId: credential.clientId, clientSecret: `${secret.slice(0, -1)}x` };
    const right = { clientId: credential.clientId, clientSecret: secret };
    const cases = {
      wrongSecret: () => admins.match(withCredential, wrong, '203.0.113.1'),
      outsideTheList: () => admins.match(withCredential, right, '198.51.100.1'),
      expired: () => {
        clock.time = T0 + 60_000;
        const matched = admins.match(withCredential, right, '203.0.113.1');
        clock.time = T0;
        return matched;
      },
    };
    assert.deepEqual(
      Object.values(cases).map((call) => {
        const matched = call();
        return 'refusal' in matched ? matched.refusal : 'none';
      }),
      ['invalid_client', 'address_not_allowed', 'credential_expired'],
    );
    // As in service: the right secret has been used from a listed address, and is remembered.
    assert.ok('secret' in admins.match(withCredential, right, '203.0.113.1'));
    // Medians of many rounds, the cases interleaved: a refusal that skipped the HMAC (most of a
    // check's time), or took the remembered secret's quicker comparison, would take a fraction of
    // the others' time.
    const medians: Record<string, number> = {};
    const rounds = 400;
    const samples: Record<string, number[]> = { wrongSecret: [], outsideTheList: [], expired: [] };
    for (let round = 0; round < rounds; round++) {
      for (const [name, call] of Object.entries(cases)) {
        const started = process.hrtime.bigint();
        call();
        samples[name]!.push(Number(process.hrtime.bigint() - started));
      }
    }
    for (const [name, times] of Object.entries(samples)) medians[name] = times.sort((a, b) => a - b)[rounds / 2]!;
    const slowest = Math.max(...Object.values(medians));
    const fastest = Math.min(...Object.values(medians));
    assert.ok(slowest < 2 * fastest, `medians in ns: ${JSON.stringify(medians)}`);
  });
});
