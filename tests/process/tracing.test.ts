import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { CreatedApp } from '../../src/apps/service.js';
import { openStore } from '../../src/store/open.js';
import { createTessera } from '../../src/tessera.js';
import { cleanupsAfterAll, sleep, terminate } from '../helpers/fleet.js';
import { adminFields, adminTokenOf, anonymousTokenOf, appUrlOf, basic, bearer, request, requestToken } from '../helpers/http.js';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { freePort, startServerProcess, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

/**
 * The real `tessera serve`, with OpenTelemetry's standard variables pointing at an OTLP/HTTP
 * receiver of the test's own: the spans it exports continue the caller's W3C `traceparent`, and
 * show the token check, issuance and the store inside the request's span (and PostgreSQL's queries
 * inside the store's); at a ratio of 0 it exports nothing of its own. And `X-Request-Id` as it is
 * logged on the request's line.
 */

const cleanup = cleanupsAfterAll();

const SERVER = 2;
const CLIENT = 3;

function newTraceparent(sampled = true): { traceId: string; parentId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-${sampled ? '01' : '00'}` };
}

/** A server on a store of the backend's with one app, and the app. */
async function tracedServer(
  backend: 'sqlite' | 'postgres',
  env: Record<string, string>,
): Promise<{ server: ServerProcess; app: CreatedApp }> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-tracing-'));
  cleanup(async () => rmSync(dir, { recursive: true, force: true }));
  let databaseUrl = `sqlite:${join(dir, 'tessera.db')}`;
  if (backend === 'postgres') {
    const database = await createPostgresDatabase();
    cleanup(database.drop);
    databaseUrl = database.databaseUrl;
  }
  const store = await openStore(databaseUrl);
  const app = await createTessera({ store }).apps.create('Traced app');
  await store.close();
  const server = await startServerProcess({
    entry: TESSERA_MAIN,
    cwd: dir,
    env: { DATABASE_URL: databaseUrl, DEMO_APP: 'off', RATE_LIMITS: 'off', OTEL_BSP_SCHEDULE_DELAY: '50', ...env },
  });
  cleanup(() => terminate(server));
  return { server, app };
}

/** The span's ancestors in its trace, nearest first. */
function ancestorsOf(span: ReceivedSpan, trace: ReceivedSpan[]): ReceivedSpan[] {
  const ancestors: ReceivedSpan[] = [];
  for (let parent = trace.find((other) => other.spanId === span.parentSpanId); parent !== undefined;) {
    ancestors.push(parent);
    const next = parent.parentSpanId;
    parent = trace.find((other) => other.spanId === next);
  }
  return ancestors;
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`traces of a real tessera serve on ${backend}`, () => {
    let receiver: OtlpReceiver;
    let server: ServerProcess;
    let app: CreatedApp;
    let appUrl: string;
    const serviceName = backend === 'postgres' ? 'tessera-on-postgres' : 'tessera';

    before(async () => {
      receiver = await OtlpReceiver.start();
      cleanup(() => receiver.close());
      ({ server, app } = await tracedServer(backend, {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        ...(backend === 'postgres' ? { OTEL_SERVICE_NAME: serviceName } : {}),
      }));
      appUrl = appUrlOf(server.baseUrl, app.appId);
    });

    /** The trace's spans, once its request's span and `also` have arrived. */
    async function traceOf(traceId: string, route: string, also: string[]): Promise<{ trace: ReceivedSpan[]; root: ReceivedSpan }> {
      return receiver.waitFor(`trace ${traceId} with ${route} and ${also.join(', ')}`, () => {
        const trace = receiver.trace(traceId);
        const root = trace.find((span) => span.kind === SERVER && span.name === route);
        return root !== undefined && also.every((name) => trace.some((span) => span.name === name)) ? { trace, root } : undefined;
      });
    }

    it('says so at start, naming the exporter and the endpoint', async () => {
      // Written just after the line startServerProcess waits for, off the main thread: it may come a moment later.
      const deadline = Date.now() + 5_000;
      const tracingLine = () =>
        server
          .stdout()
          .split('\n')
          .find((entry) => entry.includes('"tracing on'));
      while (tracingLine() === undefined && Date.now() < deadline) await sleep(25);
      const line = tracingLine();
      assert.ok(line !== undefined, server.stdout());
      assert.equal(JSON.parse(line).exporter, 'otlp (http/json)');
      assert.equal(JSON.parse(line).endpoint, `${receiver.url}/`);
    });

    it('a token request continues the caller’s trace: its span, issuance inside it, the store inside that', async () => {
      const caller = newTraceparent();
      const response = await request(`${appUrl}/oauth2/token`, {
        method: 'POST',
        headers: { traceparent: caller.header, 'content-type': 'application/json', authorization: basic(app.appId) },
        body: JSON.stringify(adminFields({ app, appUrl })),
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.headers.get('x-request-id'), caller.traceId);
      const { trace, root } = await traceOf(caller.traceId, 'POST /api/apps/:appId/oauth2/token', [
        'tessera.token.issue',
        'store tokens.insert',
      ]);
      assert.equal(root.parentSpanId, caller.parentId);
      assert.equal(root.scope, '@fastify/otel');
      assert.equal(root.attributes['http.route'], '/api/apps/:appId/oauth2/token');
      assert.equal(root.attributes['http.response.status_code'], 200);
      assert.equal(root.attributes['tessera.request_id'], caller.traceId);
      assert.equal(root.resource['service.name'], serviceName);
      const issue = trace.find((span) => span.name === 'tessera.token.issue')!;
      assert.equal(issue.attributes['tessera.app_id'], app.appId);
      assert.equal(issue.attributes['tessera.token.kind'], 'admin');
      assert.ok(ancestorsOf(issue, trace).includes(root));
      const insert = trace.find((span) => span.name === 'store tokens.insert')!;
      assert.ok(ancestorsOf(insert, trace).includes(issue));
      assert.equal(insert.attributes['db.system.name'], backend === 'postgres' ? 'postgresql' : 'sqlite');
      if (backend === 'postgres') {
        const queries = await receiver.waitFor('PostgreSQL query spans', () => {
          const found = receiver
            .trace(caller.traceId)
            .filter((span) => span.scope === '@opentelemetry/instrumentation-pg' && span.kind === CLIENT);
          return found.length > 0 ? found : undefined;
        });
        const storeSpans = receiver.trace(caller.traceId).filter((span) => span.name.startsWith('store '));
        assert.ok(
          queries.some((query) => ancestorsOf(query, receiver.trace(caller.traceId)).some((ancestor) => storeSpans.includes(ancestor))),
          `no query inside a store span: ${queries.map((query) => query.name).join(', ')}`,
        );
      }
    });

    it('a token check: its span inside the request’s, with what the store was asked', async () => {
      const token = await adminTokenOf({ app, appUrl });
      const caller = newTraceparent();
      const response = await request(`${appUrl}/whoami`, { headers: { traceparent: caller.header, authorization: bearer(token) } });
      assert.equal(response.status, 200, response.text);
      const { trace, root } = await traceOf(caller.traceId, 'GET /api/apps/:appId/whoami', ['tessera.token.check']);
      const check = trace.find((span) => span.name === 'tessera.token.check')!;
      assert.ok(ancestorsOf(check, trace).includes(root));
      assert.equal(check.attributes['tessera.token.valid'], true);
      assert.equal(check.attributes['tessera.token.kind'], 'admin');
      // The checker had not seen this token: it asked the store.
      const lookup = trace.find((span) => span.name === 'store tokens.findBySelector');
      assert.ok(lookup !== undefined && ancestorsOf(lookup, trace).includes(check), trace.map((span) => span.name).join(', '));
      if (backend === 'postgres') {
        await receiver.waitFor('the lookup’s query', () =>
          receiver
            .trace(caller.traceId)
            .find(
              (span) =>
                span.scope === '@opentelemetry/instrumentation-pg' && ancestorsOf(span, receiver.trace(caller.traceId)).includes(lookup),
            ),
        );
      }
    });

    it('requests in sampled and unsampled traces at once: each sampled one has its spans, the others none', async () => {
      // The choice is made as each request arrives and told to @fastify/otel while Fastify's handler
      // runs; requests in flight at the same time must not take one another's.
      const token = await adminTokenOf({ app, appUrl });
      const callers = Array.from({ length: 40 }, (_, index) => ({ ...newTraceparent(index % 2 === 0), token: index % 4 < 2 }));
      const answers = await Promise.all(
        callers.map((caller) =>
          caller.token
            ? request(`${appUrl}/oauth2/token`, {
                method: 'POST',
                headers: { traceparent: caller.header, 'content-type': 'application/json', authorization: basic(app.appId) },
                body: JSON.stringify(adminFields({ app, appUrl })),
              })
            : request(`${appUrl}/whoami`, { headers: { traceparent: caller.header, authorization: bearer(token) } }),
        ),
      );
      for (const answer of answers) assert.equal(answer.status, 200, answer.text);
      for (const caller of callers.filter((caller) => caller.header.endsWith('-01'))) {
        const route = caller.token ? 'POST /api/apps/:appId/oauth2/token' : 'GET /api/apps/:appId/whoami';
        const { trace, root } = await traceOf(caller.traceId, route, [caller.token ? 'tessera.token.issue' : 'tessera.token.check']);
        assert.equal(root.parentSpanId, caller.parentId);
        assert.equal(trace.filter((span) => span.kind === SERVER).length, 1, 'one request span');
      }
      await sleep(500);
      for (const caller of callers.filter((caller) => caller.header.endsWith('-00'))) {
        assert.deepEqual(receiver.trace(caller.traceId), [], `spans of an unsampled request (${caller.traceId})`);
      }
    });

    it('forward authentication and a refused token: spans too, the refusal an answer rather than a failure', async () => {
      const token = await anonymousTokenOf({ app, appUrl });
      const allowed = newTraceparent();
      const answer = await request(`${server.baseUrl}/api/forward-auth`, {
        headers: { traceparent: allowed.header, authorization: bearer(token), 'x-original-uri': `/api/apps/${app.appId}/objects` },
      });
      assert.equal(answer.status, 200, answer.text);
      const { trace } = await traceOf(allowed.traceId, 'GET /api/forward-auth', ['tessera.token.check']);
      assert.equal(trace.find((span) => span.name === 'tessera.token.check')!.attributes['tessera.token.kind'], 'anonymous');
      const refused = newTraceparent();
      const refusal = await request(`${appUrl}/whoami`, {
        headers: { traceparent: refused.header, authorization: bearer('x'.repeat(43)) },
      });
      assert.equal(refusal.status, 401);
      const { root } = await traceOf(refused.traceId, 'GET /api/apps/:appId/whoami', ['tessera.token.check']);
      assert.equal(root.attributes['http.response.status_code'], 401);
      assert.equal(
        receiver.trace(refused.traceId).find((span) => span.name === 'tessera.token.check')!.attributes['tessera.token.valid'],
        false,
      );
    });

    it('no secret, token, AppKey or query string in anything exported; no trace of the health checks', async () => {
      const token = await adminTokenOf({ app, appUrl });
      const caller = newTraceparent();
      await request(`${appUrl}/whoami?access_token=${token}`, { headers: { traceparent: caller.header, authorization: bearer(token) } });
      const probe = newTraceparent();
      await request(`${server.baseUrl}/readyz`, { headers: { traceparent: probe.header } });
      const { root } = await traceOf(caller.traceId, 'GET /api/apps/:appId/whoami', ['tessera.token.check']);
      assert.equal(root.attributes['url.path'], `/api/apps/${app.appId}/whoami`);
      await sleep(300);
      assert.deepEqual(receiver.trace(probe.traceId), []);
      const exported = Buffer.concat(receiver.exports.map((entry) => entry.body)).toString('utf8');
      for (const [what, value] of Object.entries({ token, clientSecret: app.clientSecret, appKey: app.appKey })) {
        assert.ok(!exported.includes(value), `${what} was exported`);
      }
    });
  });
}

describe('sampling, the default protocol, and request ids on the log lines of a real tessera serve', () => {
  let receiver: OtlpReceiver;
  let server: ServerProcess;
  let app: CreatedApp;
  let appUrl: string;

  before(async () => {
    receiver = await OtlpReceiver.start();
    cleanup(() => receiver.close());
    // Neither OTEL_EXPORTER_OTLP_PROTOCOL nor OTEL_TRACES_EXPORTER: OTLP over http/protobuf, the standard's default.
    ({ server, app } = await tracedServer('sqlite', {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
      LOG_REQUESTS: 'on',
    }));
    appUrl = appUrlOf(server.baseUrl, app.appId);
  });

  /** The request log lines of the server so far, parsed. */
  function requestLines(): Record<string, any>[] {
    return server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"request completed"'))
      .map((line) => JSON.parse(line));
  }

  it('at a ratio of 0, requests without a trace, or in an unsampled one, export nothing', async () => {
    for (let i = 0; i < 20; i++) {
      assert.equal((await requestToken({ app, appUrl }, adminFields({ app, appUrl }))).status, 200);
      const unsampled = newTraceparent(false);
      const response = await request(`${appUrl}/whoami`, { headers: { traceparent: unsampled.header, authorization: basic(app.appId) } });
      assert.equal(response.status, 200);
    }
    await sleep(1_000);
    assert.deepEqual(receiver.exports, []);
  });

  it('a caller’s sampled trace is still continued (parent-based), exported as protobuf', async () => {
    const caller = newTraceparent();
    const response = await request(`${appUrl}/whoami`, { headers: { traceparent: caller.header, authorization: basic(app.appId) } });
    assert.equal(response.status, 200);
    const exported = await receiver.waitFor('an export', () => receiver.exports[0]);
    assert.equal(exported.path, '/v1/traces');
    assert.equal(exported.contentType, 'application/x-protobuf');
    assert.ok(exported.body.includes(Buffer.from(caller.traceId, 'hex')), 'the trace id is not in the export');
  });

  it('every request line has its reqId: the one sent, or one made', async () => {
    await request(`${appUrl}/whoami`, { headers: { 'x-request-id': 'log-line-1', authorization: basic(app.appId) } });
    await request(`${server.baseUrl}/no/such/path`, { headers: { 'x-request-id': 'log-line-404' } });
    const tooLong = await request(`${server.baseUrl}/healthz`, { headers: { 'x-request-id': 'y'.repeat(200) } });
    const made = tooLong.headers.get('x-request-id');
    assert.match(made ?? '', /^[0-9a-f]{16}-[0-9a-z]+$/);
    // The logs are written off the request path: the last line may come a moment after its answer.
    const deadline = Date.now() + 5_000;
    while (!requestLines().some((line) => line.reqId === made) && Date.now() < deadline) await sleep(50);
    const lines = requestLines();
    const byId = new Map(lines.map((line) => [line.reqId, line]));
    assert.equal(byId.get('log-line-1')?.statusCode, 200);
    assert.equal(byId.get('log-line-404')?.statusCode, 404);
    assert.equal(byId.get(made)?.req.path, '/healthz');
    assert.ok(!server.stdout().includes('y'.repeat(129)), 'the refused id was logged');
    assert.ok(
      lines.every((line) => typeof line.reqId === 'string' && line.reqId !== ''),
      'a request line without reqId',
    );
  });
});

describe('a collector that cannot be reached', () => {
  it('every request is answered, and the failed exports are logged once a minute at most, not once each', async () => {
    const { server } = await tracedServer('sqlite', {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: '500',
    });
    for (let i = 0; i < 5; i++) {
      const response = await request(`${server.baseUrl}/no/such/path`, { headers: { traceparent: newTraceparent().header } });
      assert.equal(response.status, 404);
      await sleep(300);
    }
    const warnings = () =>
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('tracing (OpenTelemetry)'));
    const deadline = Date.now() + 5_000;
    while (warnings().length === 0 && Date.now() < deadline) await sleep(50);
    assert.equal(warnings().length, 1, server.stdout());
    assert.match(JSON.parse(warnings()[0]!).msg, /ECONNREFUSED/);
    assert.equal(JSON.parse(warnings()[0]!).level, 40);
  });
});

describe('stopping a traced server', () => {
  it('sends the spans not yet sent, then exits 0', async () => {
    const receiver = await OtlpReceiver.start();
    cleanup(() => receiver.close());
    const { server } = await tracedServer('sqlite', {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // Nothing is sent before the stop.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    const caller = newTraceparent();
    assert.equal((await request(`${server.baseUrl}/no/such/path`, { headers: { traceparent: caller.header } })).status, 404);
    await sleep(200);
    assert.deepEqual(receiver.spans, []);
    const { code } = await terminate(server);
    assert.equal(code, 0, server.stderr());
    const [span] = receiver.trace(caller.traceId);
    assert.equal(span?.kind, SERVER);
    assert.equal(span?.attributes['http.response.status_code'], 404);
    assert.match(server.stdout(), /"msg":"stopped"/);
  });
});
