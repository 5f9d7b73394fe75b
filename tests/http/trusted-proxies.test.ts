import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertError } from '../helpers/assert.js';
import { adminFields, anonymousFields, bearer, requestAs, requestToken } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

/** X-Forwarded-For gives the client address only when the connection comes from a trusted proxy. */

const LIMIT = 3;
const limits = {
  enabled: true,
  tokenRequestsPerAddressPerMinute: LIMIT,
  adminFailuresPerAddressPerMinute: 1000,
  adminFailuresPerAppPerMinute: 1000,
};
const servers: TestServer[] = [];
after(async () => {
  for (const server of servers) await server.close();
});

const fromClient = (server: TestServer, forwardedFor: string) =>
  requestToken(server, anonymousFields(server), { 'x-forwarded-for': forwardedFor });

/** The client addresses of the app's newest `count` events of `type`, oldest first. */
async function clientAddresses(server: TestServer, adminToken: string, type: string, count: number): Promise<string[]> {
  // Events are written in batches, a moment after their operation.
  await server.tessera.events.flush();
  const page = await requestAs(`${server.appUrl}/events?type=${type}&limit=${count}`, bearer(adminToken));
  assert.equal(page.status, 200, page.text);
  return (page.body.events as Array<{ clientAddress: string }>).map((event) => event.clientAddress).reverse();
}

describe('X-Forwarded-For and TRUSTED_PROXIES', () => {
  it('is ignored by default: every request counts for the TCP peer, whatever it claims', async () => {
    const server = await startServer({ rateLimits: limits });
    servers.push(server);
    for (let i = 0; i < LIMIT; i++) assert.equal((await fromClient(server, `203.0.113.${i}`)).status, 200);
    assertError(await fromClient(server, '203.0.113.99'), 429, 'TOO_MANY_REQUESTS');
  });

  it('from a trusted proxy, counts each client address on its own and records it in events', async () => {
    const server = await startServer({ rateLimits: limits, trustedProxies: ['127.0.0.1', '::1'] });
    servers.push(server);
    for (let i = 0; i < LIMIT; i++) assert.equal((await fromClient(server, '203.0.113.1')).status, 200);
    assertError(await fromClient(server, '203.0.113.1'), 429, 'TOO_MANY_REQUESTS');
    assert.equal((await fromClient(server, '203.0.113.2')).status, 200, 'another client behind the same proxy');

    // A client cannot pick its address by prepending to the header: the proxy appends the real one.
    for (let i = 0; i < LIMIT; i++) assert.equal((await fromClient(server, `198.51.100.${i}, 203.0.113.3`)).status, 200);
    assertError(await fromClient(server, '198.51.100.77, 203.0.113.3'), 429, 'TOO_MANY_REQUESTS');

    const admin = (await requestToken(server, adminFields(server), { 'x-forwarded-for': '203.0.113.50' })).body.access_token;
    await sleep(100);
    const events = await requestAs(`${server.appUrl}/events?type=token.issued&limit=1`, bearer(admin));
    assert.equal(events.body.events[0].clientAddress, '203.0.113.50');
  });

  it('from an address that is not a trusted proxy, is ignored', async () => {
    const server = await startServer({ rateLimits: limits, trustedProxies: ['10.0.0.0/8'] });
    servers.push(server);
    for (let i = 0; i < LIMIT; i++) assert.equal((await fromClient(server, `203.0.113.${i}`)).status, 200);
    assertError(await fromClient(server, '203.0.113.99'), 429, 'TOO_MANY_REQUESTS');
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped address as the IPv4 address', async () => {
    const server = await startServer({ rateLimits: limits, trustedProxies: ['loopback'] });
    servers.push(server);
    for (const address of ['2001:db8:a:b::1', '2001:DB8:A:B:ffff:ffff:ffff:fffe', '2001:db8:a:b:0:0:0:3']) {
      assert.equal((await fromClient(server, address)).status, 200, address);
    }
    assertError(await fromClient(server, '2001:db8:a:b::4'), 429, 'TOO_MANY_REQUESTS');
    assert.equal((await fromClient(server, '2001:db8:a:c::1')).status, 200, 'another /64');

    for (const address of ['203.0.113.20', '::ffff:203.0.113.20', '::ffff:cb00:7114'])
      assert.equal((await fromClient(server, address)).status, 200, address);
    assertError(await fromClient(server, '203.0.113.20'), 429, 'TOO_MANY_REQUESTS');
  });

  it('ignores entries that are not IP addresses: the client address is the nearest hop that is one', async () => {
    const server = await startServer({ trustedProxies: ['loopback'] });
    servers.push(server);
    const admin = await requestToken(server, adminFields(server), { 'x-forwarded-for': 'evil"<script>' });
    assert.equal(admin.status, 200, admin.text);
    const forwarded = [
      '203.0.113.9, not-an-address',
      'not-an-address, 203.0.113.9',
      ' 198.51.100.7 ,\t2001:DB8::1 ',
      'fe80::1%eth0',
      '203.0.113.1:443',
      '[2001:db8::2]',
      '203.0.113.5,,',
      '2001:db8::3, 127.0.0.1, ::1',
    ];
    // Refusals are kept as events with their address (an anonymous token is only counted).
    for (const header of forwarded) {
      assertError(
        await requestToken(server, adminFields(server, { client_secret: 'wrong' }), { 'x-forwarded-for': header }),
        401,
        'invalid_client',
      );
    }
    assertError(
      await requestToken(server, adminFields(server, { client_secret: 'wrong' }), { 'x-forwarded-for': '<b>x</b>' }),
      401,
      'invalid_client',
    );

    assert.deepEqual(await clientAddresses(server, admin.body.access_token, 'token.issued', 1), ['127.0.0.1']); // evil"<script>
    assert.deepEqual(await clientAddresses(server, admin.body.access_token, 'token.refused', forwarded.length + 1), [
      '127.0.0.1', // the hop that passed on a header ending in something else
      '203.0.113.9', // the first untrusted address, before any other entry is looked at
      '2001:DB8::1', // trimmed
      '127.0.0.1', // a zone id is not a client's
      '127.0.0.1', // with a port
      '127.0.0.1', // in brackets
      '203.0.113.5', // empty list elements are ignored
      '2001:db8::3', // behind two trusted proxies
      '127.0.0.1', // <b>x</b>
    ]);
  });

  it('never takes an entry that is not an IP address as a rate-limit key', async () => {
    const server = await startServer({ rateLimits: limits, trustedProxies: ['loopback'] });
    servers.push(server);
    for (let i = 0; i < LIMIT; i++) assert.equal((await fromClient(server, `not-an-address-${i}`)).status, 200);
    // Every one of them counted for 127.0.0.1, the proxy that passed them on.
    assertError(await fromClient(server, 'yet-another-name'), 429, 'TOO_MANY_REQUESTS');
    assertError(await requestToken(server, anonymousFields(server)), 429, 'TOO_MANY_REQUESTS');
    assert.equal((await fromClient(server, '203.0.113.30')).status, 200, 'a real client address behind the proxy');
  });
});
