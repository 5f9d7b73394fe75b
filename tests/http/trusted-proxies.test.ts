import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertError } from '../helpers/assert.js';
import { adminFields, anonymousFields, bearer, request, requestToken, startServer, type TestServer } from '../helpers/server.js';

/** X-Forwarded-For gives the client address only when the connection comes from a trusted proxy. */

const LIMIT = 3;
const limits = { enabled: true, tokenRequestsPerAddressPerMinute: LIMIT, adminFailuresPerAddressPerMinute: 1000, adminFailuresPerAppPerMinute: 1000 };
const servers: TestServer[] = [];
after(async () => {
  for (const server of servers) await server.close();
});

const fromClient = (server: TestServer, forwardedFor: string) =>
  requestToken(server, anonymousFields(server), { 'x-forwarded-for': forwardedFor });

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
    const events = await request(`${server.appUrl}/events?type=token.issued&limit=1`, { headers: { authorization: bearer(admin) } });
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

    for (const address of ['203.0.113.20', '::ffff:203.0.113.20', '::ffff:cb00:7114']) assert.equal((await fromClient(server, address)).status, 200, address);
    assertError(await fromClient(server, '203.0.113.20'), 429, 'TOO_MANY_REQUESTS');
  });
});
