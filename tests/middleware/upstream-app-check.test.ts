import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import { documentedAppCheck } from '../helpers/forward-auth-docs.js';
import { request } from '../helpers/http.js';

// The one line docs/forward-auth.md gives upstreams behind forward authentication, to refuse a
// request whose X-Tessera-App-Id is not the app of its path, run as printed in real applications.

const cases = [
  { identity: 'app-a', path: '/api/apps/app-a/files/x', admitted: true },
  { identity: 'app-a', path: '/api/apps/app-b/files/x', admitted: false },
  { identity: undefined, path: '/api/apps/app-a/files/x', admitted: false },
  { identity: 'APP-A', path: '/api/apps/app-a/files/x', admitted: false },
] as const;

async function check(baseUrl: string): Promise<void> {
  for (const { identity, path, admitted } of cases) {
    const response = await request(`${baseUrl}${path}`, { headers: identity === undefined ? {} : { 'x-tessera-app-id': identity } });
    const where = `${identity} on ${path}`;
    if (admitted) {
      assert.equal(response.status, 200, where);
      assert.deepEqual(response.body, { served: 'app-a' }, where);
    } else {
      assert.equal(response.status, 403, `${where}: ${response.status} ${response.text}`);
      assert.equal(response.body.errorCode, 'APP_MISMATCH', where);
    }
  }
}

describe("the upstream's own check of X-Tessera-App-Id, as docs/forward-auth.md prints it", () => {
  it('Express', async () => {
    const app = express();
    documentedAppCheck('Express')(app);
    app.get('/api/apps/:appId/files/*rest', (request, response) => {
      response.json({ served: request.params.appId });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      await check(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it('Fastify', async () => {
    const app = Fastify();
    documentedAppCheck('Fastify')(app);
    app.get<{ Params: { appId: string } }>('/api/apps/:appId/files/*', async (request) => ({ served: request.params.appId }));
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      await check(address);
    } finally {
      await app.close();
    }
  });
});
