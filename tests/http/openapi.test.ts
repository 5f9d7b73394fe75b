import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildServer } from '../../src/server.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { createTessera } from '../../src/tessera.js';
import { request } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

const documentPath = join(PACKAGE_ROOT, 'docs', 'openapi.json');
const document = JSON.parse(readFileSync(documentPath, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** `/api/apps/{appId}/{path}` -> `/api/apps/:appId/*` (the catch-all's last parameter is a wildcard). */
function toRouteUrl(path: string): string {
  return path.replace('/{path}', '/*').replace(/\{(\w+)\}/g, ':$1');
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(documentPath);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
  });

  describe('against the routes of the server', () => {
    let testStore: TestStore;
    const routes = new Set<string>();
    let app: ReturnType<typeof buildServer>;
    before(async () => {
      testStore = await createTestStore();
      app = buildServer({ tessera: createTessera({ store: testStore.store }) });
      app.addHook('onRoute', (route) => {
        for (const method of [route.method].flat()) routes.add(`${method} ${route.url}`);
      });
      await app.ready();
    });
    after(async () => {
      await app.close();
      await testStore.dispose();
    });

    it('documents only operations the server has', () => {
      for (const [path, item] of Object.entries(document.paths)) {
        for (const method of Object.keys(item).filter((key) => HTTP_METHODS.includes(key))) {
          assert.ok(app.hasRoute({ method: method.toUpperCase(), url: toRouteUrl(path) }), `${method} ${path}`);
        }
      }
    });

    it('documents every path the server routes', () => {
      const documented = new Set(Object.keys(document.paths).map(toRouteUrl));
      // @fastify/cors routes OPTIONS of every path no route has, only to answer 404 there (preflights
      // of the paths that are an app's go to their own routes).
      // The portal's pages (and `/`, which redirects there) are HTML for people, not the API (docs/portal.md).
      const routed = new Set(
        [...routes]
          .filter((route) => route !== 'OPTIONS *')
          .map((route) => route.split(' ')[1]!.replace(/\/$/, '') || '/')
          .filter((url) => url !== '/' && url !== '/portal' && !url.startsWith('/portal/')),
      );
      for (const url of routed) assert.ok(documented.has(url), `${url} is routed but not in docs/openapi.json`);
      assert.ok(routed.size >= 5, `only ${routed.size} routes seen: ${[...routed].join(', ')}`);
    });
  });

  describe('served at /openapi.json', () => {
    const server = serverForSuite();

    it('is the file in the repository, as JSON', async () => {
      const response = await request(`${server.baseUrl}/openapi.json`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(response.body, document);
    });
  });
});
