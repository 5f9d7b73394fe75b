import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { OPERATOR } from '../../src/request-context.js';
import { MAX_REQUEST_ID_LENGTH, REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import { buildServer, openApiDocument } from '../../src/server.js';
import { PACKAGE_ROOT, packageVersion } from '../../src/package-root.js';
import { createTessera } from '../../src/tessera.js';
import { request } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

const documentPath = join(PACKAGE_ROOT, 'docs', 'openapi.json');
const document = JSON.parse(readFileSync(documentPath, 'utf8')) as OpenApi;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Reference {
  $ref?: string;
}
interface Response extends Reference {
  headers?: Record<string, Reference>;
}
interface Operation {
  parameters?: Reference[];
  responses: Record<string, Response>;
}
interface OpenApi {
  info: { version: string };
  paths: Record<string, Record<string, unknown> & { parameters?: Reference[] }>;
  components: {
    parameters: Record<string, { name: string; in: string; required: boolean; schema: object }>;
    headers: Record<string, { required?: boolean; description?: string; schema: { const?: string } }>;
    responses: Record<string, Response>;
  };
}

const REQUEST_ID_PARAMETER = '#/components/parameters/XRequestId';
const REQUEST_ID_HEADER = '#/components/headers/XRequestId';
/** What the server takes of a client's X-Request-Id, and what each id it answers with matches: src/http/request-id.ts. */
const REQUEST_ID_SCHEMA = { type: 'string', maxLength: MAX_REQUEST_ID_LENGTH, pattern: REQUEST_ID_PATTERN };

/** Every operation of the document: `get /healthz` and its path item. */
function operations(): { name: string; item: OpenApi['paths'][string]; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    HTTP_METHODS.filter((method) => item[method] !== undefined).map((method) => ({
      name: `${method} ${path}`,
      item,
      operation: item[method] as Operation,
    })),
  );
}

/** A response, or the one of components/responses it refers to. */
function resolved(response: Response): Response {
  if (response.$ref === undefined) return response;
  const name = response.$ref.replace('#/components/responses/', '');
  const component = document.components.responses[name];
  assert.ok(component, `${response.$ref} is not in components/responses`);
  return component;
}

/** `/api/apps/{appId}/{path}` -> `/api/apps/:appId/*` (the catch-all's last parameter is a wildcard). */
function toRouteUrl(path: string): string {
  return path.replace('/{path}', '/*').replace(/\{(\w+)\}/g, ':$1');
}

describe('the OpenAPI document', () => {
  it('is what the routes generate (npm run openapi writes it)', async () => {
    const testStore = await createTestStore();
    try {
      const generated = await openApiDocument(createTessera({ store: testStore.store }));
      // Not assert.equal on 300 KB: the first operation that differs says what to look at.
      const [written, fresh] = [JSON.parse(readFileSync(documentPath, 'utf8')) as OpenApi, JSON.parse(generated) as OpenApi];
      for (const path of new Set([...Object.keys(written.paths), ...Object.keys(fresh.paths)])) {
        assert.deepEqual(written.paths[path], fresh.paths[path], `${path}: run npm run openapi`);
      }
      assert.ok(generated === readFileSync(documentPath, 'utf8'), 'docs/openapi.json is not what the routes generate: run npm run openapi');
    } finally {
      await testStore.dispose();
    }
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(documentPath);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
  });

  it("names the package's release as its version", () => {
    assert.equal(document.info.version, packageVersion());
  });

  describe('X-Request-Id, declared once in components and referred to everywhere', () => {
    it('the request header: optional, with the limits the server takes an id within', () => {
      const parameter = document.components.parameters.XRequestId;
      assert.ok(parameter, 'components/parameters/XRequestId');
      assert.equal(parameter.name, 'X-Request-Id');
      assert.equal(parameter.in, 'header');
      assert.equal(parameter.required, false);
      assert.deepEqual(parameter.schema, REQUEST_ID_SCHEMA);
    });

    it('the response header: always there, with the same limits', () => {
      const header = document.components.headers.XRequestId;
      assert.ok(header, 'components/headers/XRequestId');
      assert.equal(header.required, true);
      assert.deepEqual(header.schema, REQUEST_ID_SCHEMA);
    });

    it('every operation takes it (from its path) and every response of every operation carries it', () => {
      const lacking: string[] = [];
      let responses = 0;
      for (const { name, item, operation } of operations()) {
        const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])];
        if (!parameters.some((parameter) => parameter.$ref === REQUEST_ID_PARAMETER)) lacking.push(`${name}: the parameter`);
        for (const [status, response] of Object.entries(operation.responses)) {
          responses++;
          if (resolved(response).headers?.['X-Request-Id']?.$ref !== REQUEST_ID_HEADER) lacking.push(`${name} ${status}: the header`);
        }
      }
      assert.deepEqual(lacking, [], 'src/http/openapi.ts adds the references (npm run openapi)');
      assert.ok(operations().length >= 50 && responses >= 200, `only ${operations().length} operations, ${responses} responses`);
    });

    it('no path or operation writes out a parameter of its own for it: the component is the one definition', () => {
      const inline = (parameters: Reference[] = []) =>
        parameters.some((parameter) => (parameter as { name?: string }).name?.toLowerCase() === 'x-request-id');
      for (const { name, item, operation } of operations()) assert.ok(!inline(item.parameters) && !inline(operation.parameters), name);
    });
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

    it('the ids the server answers with match the documented pattern: one sent, a trace id, one made', async () => {
      const pattern = new RegExp(REQUEST_ID_SCHEMA.pattern);
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      for (const [headers, expected] of [
        [{ 'x-request-id': 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6' }, 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6'],
        [{ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }, traceId],
        [{}, undefined],
        [{ 'x-request-id': 'has space' }, undefined],
      ] as const) {
        const id = (await request(`${server.baseUrl}/openapi.json`, { headers })).headers.get('x-request-id') ?? '';
        assert.match(id, pattern);
        if (expected !== undefined) assert.equal(id, expected);
      }
    });

    it('the CORS headers it documents are those the server sends to a page', async () => {
      await server.tessera.apps.configure(server.app.appId, { allowedOrigins: ['https://app.example.com'] }, OPERATOR);
      const headers = document.components.headers;
      const preflight = await request(`${server.appUrl}/whoami`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-expose-headers'), headers.AccessControlExposeHeaders!.schema.const);
      assert.equal(preflight.headers.get('access-control-allow-methods'), headers.AccessControlAllowMethods!.schema.const);
      const allowHeaders = preflight.headers.get('access-control-allow-headers') ?? '';
      assert.ok(headers.AccessControlAllowHeaders!.description?.startsWith(`\`${allowHeaders}\``), allowHeaders);
      assert.match(preflight.headers.get('x-request-id') ?? '', new RegExp(REQUEST_ID_SCHEMA.pattern), 'preflights carry it too');
    });
  });
});
