import Fastify from 'fastify';
// Relative imports: this suite checks the code compiled beside it (express.test.ts goes through the exports map).
import { requireAdmin, requireScope, tesseraAuth } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { TesseraVerifier } from 'tessera-tokens/internal/verifier.js';
import { describeMiddleware, type Authenticator } from '../helpers/middleware.js';

// A real Fastify service that authenticates the routes of one scope with `tesseraAuth` and a `TesseraVerifier`.

async function startFastifyService(authenticator: Authenticator) {
  const app = Fastify();
  app.get('/healthz', async (_request, reply) => reply.type('text/plain').send('ok'));
  await app.register(async (scope) => {
    await scope.register(tesseraAuth, { authenticator });
    scope.get('/api/apps/:appId/principal', async (request) => request.principal);
    scope.get('/api/apps/:appId/users/:userId', async (request) => request.principal);
    scope.get('/api/apps/:appId/admin/report', { onRequest: requireAdmin }, async (request) => ({
      report: 'ok',
      principal: request.principal,
    }));
    scope.get('/api/apps/:appId/reports', { onRequest: requireScope('reports:read') }, async (request) => ({
      reports: [],
      principal: request.principal,
    }));
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { baseUrl: `http://127.0.0.1:${address.port}`, close: () => app.close() };
}

describeMiddleware({
  framework: 'Fastify',
  openVerifier: (databaseUrl) => TesseraVerifier.open({ databaseUrl }),
  startService: startFastifyService,
});
