import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import express from 'express';
// Through the package's own names (its "exports" map), as another service imports them.
import { tesseraExpress, tesseraRequireAdmin, tesseraRequireScope, type ExpressLikeRequest } from 'tessera-tokens/middleware/express';
import { TesseraVerifier } from 'tessera-tokens/verifier';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { describeMiddleware, type Authenticator } from '../helpers/middleware.js';

// A real Express 5 service that authenticates its routes with `tesseraExpress` and a `TesseraVerifier`.

async function startExpressService(authenticator: Authenticator) {
  const app = express();
  app.get('/healthz', (_request, response) => {
    response.type('text').send('ok');
  });
  app.use('/api/apps/:appId', tesseraExpress(authenticator));
  // `tesseraExpress` sets `principal` on the request; Express's own Request type does not declare it.
  const principalOf = (request: object) => (request as ExpressLikeRequest).principal;
  app.get('/api/apps/:appId/principal', (request, response) => {
    response.json(principalOf(request));
  });
  app.get('/api/apps/:appId/users/:userId', (request, response) => {
    response.json(principalOf(request));
  });
  app.get('/api/apps/:appId/admin/report', tesseraRequireAdmin, (request, response) => {
    response.json({ report: 'ok', principal: principalOf(request) });
  });
  app.get('/api/apps/:appId/reports', tesseraRequireScope('reports:read'), (request, response) => {
    response.json({ reports: [], principal: principalOf(request) });
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      server.closeAllConnections();
      await closed;
    },
  };
}

describeMiddleware({
  framework: 'Express',
  openVerifier: (databaseUrl) => TesseraVerifier.open({ databaseUrl }),
  startService: startExpressService,
});

describe('the package exports', () => {
  it('name the built middleware, verifier and client of the workspace packages/tessera-tokens, which the package publishes', () => {
    const root = pathToFileURL(join(PACKAGE_ROOT, 'packages', 'tessera-tokens') + '/');
    for (const [name, file] of [
      ['tessera-tokens/verifier', 'dist/verifier.js'],
      ['tessera-tokens/middleware/fastify', 'dist/http/middleware/fastify.js'],
      ['tessera-tokens/middleware/express', 'dist/http/middleware/express.js'],
      ['tessera-tokens/client', 'dist/client/client.js'],
    ] as const) {
      assert.equal(import.meta.resolve(name), new URL(file, root).href, name);
    }
    assert.equal(typeof TesseraVerifier.open, 'function');
    assert.equal(typeof tesseraExpress, 'function');
    assert.equal(typeof tesseraRequireAdmin, 'function');
    assert.equal(typeof tesseraRequireScope, 'function');
    assert.throws(() => tesseraRequireScope('Reports Read'), /not a scope/);
  });
});
