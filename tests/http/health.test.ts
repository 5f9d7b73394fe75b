import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertError } from '../helpers/assert.js';
import { request } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';

describe('/healthz and /readyz, for load balancers', () => {
  const server = serverForSuite();

  it('/healthz: 200 while the process runs, without credentials', async () => {
    const response = await request(`${server.baseUrl}/healthz`);
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { status: 'ok' });
    assert.equal(response.headers.get('cache-control'), 'no-store');
  });

  it('/readyz: 200, the store, and that changes made elsewhere are heard, when the store answers', async () => {
    const response = await request(`${server.baseUrl}/readyz`);
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { status: 'ready', store: server.tessera.store.backend, changeSignal: 'up' });
  });

  it('/readyz: 503 SERVICE_UNAVAILABLE with Retry-After once the store no longer answers; /healthz still 200', async () => {
    await server.tessera.store.close();
    const ready = await request(`${server.baseUrl}/readyz`);
    assertError(ready, 503, 'SERVICE_UNAVAILABLE');
    assert.match(ready.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assert.equal((await request(`${server.baseUrl}/healthz`)).status, 200);
  });
});
