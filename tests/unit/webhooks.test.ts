import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { cloudEventOf } from '../../src/webhooks/cloud-event.js';
import { checkDestination, checkedLookup, isNotPublic, parseWebhookUrl, SAFE_DESTINATIONS } from '../../src/webhooks/destination.js';
import { MAX_ATTEMPTS, nextAttemptAt, RETRY_DELAYS_MS } from '../../src/webhooks/schedule.js';
import { generateWebhookSecret, signWebhook, verifiesWith } from '../../src/webhooks/signature.js';

// The parts of webhooks that are pure: Standard Webhooks signatures (held to the `standardwebhooks`
// library, which receivers use), CloudEvents bodies, the retry schedule, and where a webhook may go.

describe('webhook signatures', () => {
  const body = JSON.stringify(
    cloudEventOf({ id: 42, appId: 'app1', type: 'token.refused', at: 0, principal: null, clientAddress: '192.0.2.1', details: {} }),
  );

  it('verify with the standardwebhooks library, unchanged', () => {
    const secret = generateWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = signWebhook('msg_42', timestamp, body, [secret]);
    const verified = new Webhook(secret).verify(body, { ...headers });
    assert.deepEqual(verified, JSON.parse(body));
    assert.ok(verifiesWith(headers, body, secret));
  });

  it('carry one signature per secret while a secret is rotated: a receiver with either verifies', () => {
    const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = signWebhook('msg_1', Math.floor(Date.now() / 1000), body, [current, previous]);
    assert.equal(headers['webhook-signature'].split(' ').length, 2);
    for (const secret of [current, previous]) assert.ok(new Webhook(secret).verify(body, { ...headers }));
    assert.throws(() => new Webhook(generateWebhookSecret()).verify(body, { ...headers }));
  });

  it('are refused by the library for an altered body, another id or an old timestamp', () => {
    const secret = generateWebhookSecret();
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook('msg_7', now, body, [secret]);
    assert.throws(() => new Webhook(secret).verify(`${body} `, { ...headers }));
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_8' }));
    const old = signWebhook('msg_7', now - 3600, body, [secret]);
    assert.throws(() => new Webhook(secret).verify(body, { ...old }), 'older than five minutes');
  });
});

describe('CloudEvents bodies', () => {
  it('are CloudEvents 1.0 in JSON, the audit event as its data', () => {
    const event = cloudEventOf({
      id: 9,
      appId: 'a1b2',
      type: 'app.secret_exposed',
      at: Date.UTC(2026, 0, 31, 14, 2),
      principal: 'admin',
      clientAddress: '198.51.100.4',
      details: { secret: 'current' },
    });
    assert.deepEqual(
      { ...event, data: undefined },
      {
        specversion: '1.0',
        id: '9',
        source: '/api/apps/a1b2',
        type: 'tessera.app.secret_exposed',
        subject: 'a1b2',
        time: '2026-01-31T14:02:00.000Z',
        datacontenttype: 'application/json',
        data: undefined,
      },
    );
    assert.equal(event.data.id, '9');
    assert.deepEqual(event.data.details, { secret: 'current' });
  });
});

describe('the retry schedule', () => {
  it('retries within seconds first, then further apart, for about three days, then gives up', () => {
    assert.equal(nextAttemptAt(1, 1_000), 6_000, 'the first retry 5 s after the first failure');
    const total = RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0);
    assert.ok(total > 70 * 3_600_000 && total <= 72 * 3_600_000, `${total / 3_600_000} h`);
    assert.ok(
      RETRY_DELAYS_MS.every((delay, index) => index === 0 || delay >= RETRY_DELAYS_MS[index - 1]!),
      'never shorter',
    );
    assert.equal(nextAttemptAt(MAX_ATTEMPTS, 0), null, 'then failed');
  });
});

describe('where a webhook may go', () => {
  it('https only by default; http when allowed; no credentials; a length limit', () => {
    assert.equal(parseWebhookUrl('https://hooks.example.com/t#frag', SAFE_DESTINATIONS).href, 'https://hooks.example.com/t');
    for (const bad of [
      'http://hooks.example.com/',
      'ftp://x/',
      'hooks.example.com',
      '',
      42,
      `https://x.example/${'a'.repeat(2100)}`,
      'https://u:p@x.example/',
    ]) {
      assert.throws(() => parseWebhookUrl(bad, SAFE_DESTINATIONS), /url must/, String(bad).slice(0, 40));
    }
    assert.equal(parseWebhookUrl('http://hooks.example.com/', { allowHttp: true, allowPrivate: false }).protocol, 'http:');
  });

  it('knows the addresses that are not public, IPv4-mapped ones included', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '224.0.0.1',
      'not an address',
    ])
      assert.ok(isNotPublic(address), address);
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.ok(!isNotPublic(address), address);
  });

  it('refuses a host that resolves to a private address, at creation and in the lookup a delivery connects with', async () => {
    const resolvingTo =
      (...addresses: string[]) =>
      (_host: string, _options: object, callback: (error: null, addresses: LookupAddress[]) => void) =>
        callback(
          null,
          addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
        );
    const url = new URL('https://hooks.example.com/');
    await checkDestination(url, SAFE_DESTINATIONS, resolvingTo('93.184.216.34') as never);
    await assert.rejects(
      checkDestination(url, SAFE_DESTINATIONS, resolvingTo('93.184.216.34', '10.0.0.5') as never),
      /not a public address/,
    );
    await checkDestination(url, { allowHttp: false, allowPrivate: true }, resolvingTo('127.0.0.1') as never);
    const lookup = checkedLookup(SAFE_DESTINATIONS, resolvingTo('169.254.169.254') as never);
    const error = await new Promise<NodeJS.ErrnoException | null>((done) => lookup('metadata.example', {}, (found) => done(found)));
    assert.equal(error?.code, 'EDESTINATION');
    await assert.rejects(checkDestination(new URL('https://[::1]/'), SAFE_DESTINATIONS), /not a public address/);
    await assert.rejects(checkDestination(new URL('https://127.0.0.1/'), SAFE_DESTINATIONS), /not a public address/);
  });
});
