import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { FETCH_PAGE, pageFetch, type PageRead } from '../helpers/fetch-page.js';
import { documentedNginxConfig } from '../helpers/forward-auth-docs.js';
import { anonymousFields, basic, bearer, requestToken } from '../helpers/http.js';
import { closeServer, listenOnLoopback } from '../helpers/listen.js';
import { findNginx, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { startServer, type TestServer } from '../helpers/server.js';

// The rest of the backend, behind nginx with the forward authentication docs/forward-auth.md
// documents (read from there), called from a web page in Chromium: preflights are answered by
// Tessera through nginx, and every answer carries the CORS headers Tessera decided on.

/** What the upstream saw of each request. */
interface Seen {
  method: string;
  url: string;
  principal: string | undefined;
  requestId: string | undefined;
}

/**
 * The application behind nginx. It answers everything with what it saw, echoing the request's
 * `X-Request-Id` as many applications do, and (wrongly) allows every origin itself: nginx must hide
 * that, so that only Tessera decides who may read.
 */
function startUpstream(seen: Seen[]): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      const record: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        principal: req.headers['x-tessera-principal'] as string | undefined,
        requestId: req.headers['x-request-id'] as string | undefined,
      };
      seen.push(record);
      res
        .writeHead(200, {
          'content-type': 'application/json',
          'access-control-allow-origin': '*',
          'retry-after': '7',
          ...(record.requestId === undefined ? {} : { 'x-request-id': record.requestId }),
        })
        .end(JSON.stringify(record));
    });
  });
  return listenOnLoopback(server);
}

let browser: TestBrowser;
let tessera: TestServer;
let upstream: Server | undefined;
let nginx: RunningNginx | undefined;
const seen: Seen[] = [];
let page: Page;
let otherPage: Page;
let token: string;
let objects: string;

before(async () => {
  const binary = findNginx();
  if (binary === undefined) throw new Error('nginx is not installed (not on PATH, not /usr/sbin/nginx): apt-get install -y nginx');
  browser = await startBrowser();
  tessera = await startServer();
  await tessera.tessera.apps.configure(tessera.app.appId, { allowedOrigins: [browser.origin] }, OPERATOR);
  upstream = await startUpstream(seen);
  const upstreamAddress = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  nginx = await startNginx(binary, (port) => documentedNginxConfig(new URL(tessera.baseUrl).host, upstreamAddress, port));
  objects = `${nginx.baseUrl}/api/apps/${tessera.app.appId}/objects`;
  token = (await requestToken(tessera, anonymousFields(tessera))).body.access_token;
  page = await browser.openPage(FETCH_PAGE);
  otherPage = await browser.openPage(FETCH_PAGE, { origin: browser.otherOrigin });
});
after(async () => {
  await browser?.close();
  await nginx?.stop();
  await closeServer(upstream);
  await tessera?.close();
});

/** Runs `call` and answers what the upstream saw meanwhile. */
async function reaching(call: () => Promise<PageRead>): Promise<{ read: PageRead; reached: Seen[] }> {
  const before = seen.length;
  const read = await call();
  return { read, reached: seen.slice(before) };
}

describe('a web page calling the backend behind nginx and forward authentication', () => {
  it('on an origin the app lists: the preflight passes, the request reaches the upstream with its identity, the page reads the answer', async () => {
    const { read, reached } = await reaching(() =>
      pageFetch(page, `${objects}/1`, {
        method: 'PUT',
        headers: { authorization: bearer(token), 'content-type': 'application/json', 'x-request-id': 'r-1' },
        body: '{"color":"blue"}',
      }),
    );
    assert.equal(read.status, 200, `${JSON.stringify(read)}\n${nginx!.log()}`);
    const expected = { method: 'PUT', url: `/api/apps/${tessera.app.appId}/objects/1`, principal: 'anonymous', requestId: 'r-1' };
    assert.deepEqual(read.body, expected);
    assert.deepEqual(reached, [expected], 'the preflight must not reach the upstream; the request must, once');
    assert.equal(read.retryAfter, '7', "the upstream's Retry-After is readable: Tessera exposes it");
    assert.equal(read.requestId, 'r-1', "the upstream's X-Request-Id too");
  });

  it('on an origin the app lists: a refusal is readable, 401 with its WWW-Authenticate, and reaches nothing', async () => {
    const { read, reached } = await reaching(() =>
      pageFetch(page, objects, { headers: { authorization: bearer('A'.repeat(43)), 'x-request-id': 'r-401' } }),
    );
    assert.equal(read.status, 401, JSON.stringify(read));
    assert.equal(read.body.errorCode, 'INVALID_TOKEN');
    assert.equal(read.wwwAuthenticate, 'Bearer error="invalid_token"');
    assert.equal(read.requestId, 'r-401', "Tessera's refusal echoes the page's id, which the page reads");
    assert.deepEqual(reached, []);
    const anonymous = await pageFetch(page, objects);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.errorCode, 'UNAUTHORIZED');
  });

  it('on an origin the app does not list: the preflight is refused and nothing reaches the upstream; a simple request cannot be read', async () => {
    const preflighted = await reaching(() => pageFetch(otherPage, objects, { headers: { authorization: basic(tessera.app.appId) } }));
    assert.match(preflighted.read.refused ?? '', /^TypeError: Failed to fetch/, JSON.stringify(preflighted.read));
    assert.deepEqual(preflighted.reached, []);
    // A GET without headers needs no preflight: the browser sends it, and cannot even read the refusal.
    const simple = await pageFetch(otherPage, objects);
    assert.match(simple.refused ?? '', /^TypeError: Failed to fetch/, JSON.stringify(simple));
  });

  it('an admitted request from an origin the app does not list carries no CORS header, the upstream\'s own "*" hidden', async () => {
    // What a browser would get if such a request could be admitted (a server can send it, with Origin).
    const response = await fetch(objects, { headers: { origin: browser.otherOrigin, authorization: basic(tessera.app.appId) } });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('access-control-allow-origin'), null);
    const listed = await fetch(objects, { headers: { origin: browser.origin, authorization: basic(tessera.app.appId) } });
    assert.equal(listed.headers.get('access-control-allow-origin'), browser.origin, 'once, not with the upstream\'s "*" beside it');
    assert.equal(listed.headers.get('access-control-expose-headers'), 'WWW-Authenticate, Retry-After, X-Request-Id');
    assert.match(listed.headers.get('vary') ?? '', /Origin/);
  });
});
