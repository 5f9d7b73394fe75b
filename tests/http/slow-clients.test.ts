import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { anonymousFields, requestToken } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';

/**
 * Slow clients (slow-loris) over real sockets: a client that sends its headers or its body slowly,
 * or nothing at all, or keeps an idle connection, is cut off on time, and the server keeps
 * answering everyone else meanwhile. Short timeouts here; the defaults are 5 s, 10 s and 5 s.
 */

const TIMEOUTS = { headersTimeoutMs: 600, requestTimeoutMs: 1_200, keepAliveTimeoutMs: 400 };
/** Node looks for late requests once a second at most (connectionsCheckingInterval), plus slack. */
const SLACK_MS = 1_500;

let port: number;

const server = serverForSuite({ timeouts: TIMEOUTS }, async () => {
  port = Number(new URL(server.baseUrl).port);
});

interface Watched {
  socket: Socket;
  /** Resolves with when the server closed the connection, and what it wrote. */
  closed: Promise<{ at: number; received: string }>;
  /** Writes `data` a byte at a time, every `everyMs`, until the connection closes. */
  drip(data: string, everyMs: number): void;
}

function open(): Promise<Watched> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk));
    const closed = new Promise<{ at: number; received: string }>((done) => socket.once('close', () => done({ at: Date.now(), received })));
    socket.on('error', () => {});
    socket.once('connect', () =>
      resolve({
        socket,
        closed,
        drip(data, everyMs) {
          let index = 0;
          const timer = setInterval(() => {
            if (socket.destroyed || index >= data.length) return clearInterval(timer);
            socket.write(data[index++]!);
          }, everyMs);
          socket.once('close', () => clearInterval(timer));
        },
      }),
    );
    socket.once('error', reject);
  });
}

const HEADERS = `POST /api/apps/x/oauth2/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Padding: ${'a'.repeat(500)}\r\n\r\n`;

describe('slow clients', () => {
  it("headers sent a byte at a time: cut off after the headers timeout, with 408 in the contract's shape", async () => {
    const started = Date.now();
    const client = await open();
    client.drip(HEADERS, 50);
    const { at, received } = await client.closed;
    const elapsed = at - started;
    assert.ok(elapsed >= TIMEOUTS.headersTimeoutMs - 50, `closed after ${elapsed} ms, before the timeout`);
    assert.ok(elapsed <= TIMEOUTS.headersTimeoutMs + SLACK_MS, `closed after ${elapsed} ms`);
    assert.match(received, /^HTTP\/1\.1 408 /);
    assert.match(received, /"errorCode":"invalid_request"/);
  });

  it('a body sent a byte at a time: cut off after the request timeout', async () => {
    const started = Date.now();
    const client = await open();
    client.socket.write(HEADERS.replace('\r\n\r\n', '\r\nContent-Length: 400\r\n\r\n'));
    client.drip(`{"grant_type":"${'x'.repeat(390)}"}`, 50);
    const { at } = await client.closed;
    const elapsed = at - started;
    assert.ok(elapsed <= TIMEOUTS.requestTimeoutMs + SLACK_MS, `closed after ${elapsed} ms`);
  });

  it('a connection that sends nothing is closed', async () => {
    const started = Date.now();
    const client = await open();
    const { at } = await client.closed;
    assert.ok(at - started <= TIMEOUTS.requestTimeoutMs + SLACK_MS, `closed after ${at - started} ms`);
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const client = await open();
    let answeredAt = 0;
    client.socket.on('data', () => (answeredAt ||= Date.now()));
    client.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const { at, received } = await client.closed;
    assert.match(received, /^HTTP\/1\.1 200 /);
    const idle = at - answeredAt;
    assert.ok(
      idle >= TIMEOUTS.keepAliveTimeoutMs - 50 && idle <= TIMEOUTS.keepAliveTimeoutMs + SLACK_MS,
      `closed ${idle} ms after the answer`,
    );
  });

  it('keeps answering other clients quickly while 300 slow clients hold connections', async () => {
    const slow = await Promise.all(Array.from({ length: 300 }, () => open()));
    for (const client of slow) client.drip(HEADERS, 200);
    const durations: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = Date.now();
      const response = await requestToken(server, anonymousFields(server));
      durations.push(Date.now() - started);
      assert.equal(response.status, 200);
      await sleep(20);
    }
    durations.sort((a, b) => a - b);
    assert.ok(durations[durations.length - 1]! < 500, `slowest answer ${durations.at(-1)} ms during the attack`);
    const closedAt = await Promise.all(slow.map((client) => client.closed));
    const last = Math.max(...closedAt.map((closed) => closed.at));
    assert.ok(
      slow.every((client) => client.socket.destroyed),
      'every slow client was cut off',
    );
    assert.ok(last > 0);
  });
});
