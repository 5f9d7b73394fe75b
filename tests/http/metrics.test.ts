import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseAdminPathRules } from '../../src/auth/forward.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  adminFields,
  adminTokenOf,
  anonymousFields,
  anonymousTokenOf,
  basic,
  bearer,
  introspectToken,
  request,
  requestToken,
  revokeToken,
  whoami,
} from '../helpers/http.js';
import { scrape, type Scrape } from '../helpers/prometheus.js';
import { serverForSuite } from '../helpers/server.js';

// The Prometheus metrics (METRICS_PORT) of a real server: exact counts after known requests, route
// labels that are templates, series that clients cannot multiply, and the listener of their own.

const ADMIN_FAILURES_PER_ADDRESS = 6;

let metricsUrl: string;

const server = serverForSuite(
  {
    metrics: true,
    rateLimits: {
      enabled: true,
      tokenRequestsPerAddressPerMinute: 100_000,
      adminFailuresPerAddressPerMinute: ADMIN_FAILURES_PER_ADDRESS,
      adminFailuresPerAppPerMinute: 100_000,
    },
    forwardAuthAdminPaths: parseAdminPathRules(['/configuration']),
  },
  async () => {
    metricsUrl = server.metricsUrl!;
  },
);

/** The difference of each named sample between two scrapes. */
function delta(before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}): number {
  return after.value(name, labels) - before.value(name, labels);
}

/** Scrapes until `ready` holds (the event log counts what it writes, every 20 ms), at most 3 s. */
async function scrapeUntil(ready: (scraped: Scrape) => boolean): Promise<Scrape> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const scraped = await scrape(metricsUrl);
    if (ready(scraped) || Date.now() > deadline) return scraped;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function forwardAuth(uri: string, authorization?: string) {
  return request(`${server.baseUrl}/api/forward-auth`, {
    headers: { 'x-original-uri': uri, 'x-original-method': 'GET', ...(authorization === undefined ? {} : { authorization }) },
  });
}

describe('metrics of tokens', () => {
  it('count tokens issued, refused and revoked exactly, by kind and reason', async () => {
    const before = await scrape(metricsUrl);
    for (let i = 0; i < 7; i++) await anonymousTokenOf(server);
    const admins: string[] = [];
    for (let i = 0; i < 3; i++) admins.push(await adminTokenOf(server));
    for (let i = 0; i < 2; i++) {
      assert.equal((await requestToken(server, adminFields(server, { client_secret: 'wrong' }))).status, 401);
    }
    assert.equal((await whoami(server.appUrl, bearer('not-a-token'))).status, 401);
    const anonymous = await anonymousTokenOf(server);
    assert.equal((await revokeToken(server.appUrl, admins[0]!)).status, 200);
    assert.equal((await revokeToken(server.appUrl, anonymous)).status, 200);
    // Revoke-all of admin tokens counts the tokens it removed: the two left.
    const revokeAll = await request(`${server.appUrl}/tokens?kind=admin`, {
      method: 'DELETE',
      headers: { authorization: bearer(admins[1]!) },
    });
    assert.equal(revokeAll.status, 200, revokeAll.text);
    assert.equal(revokeAll.body.revoked, 2);

    const after = await scrapeUntil((scraped) => delta(before, scraped, 'tessera_tokens_issued_total', { kind: 'anonymous' }) >= 8);
    assert.equal(delta(before, after, 'tessera_tokens_issued_total', { kind: 'anonymous' }), 8);
    assert.equal(delta(before, after, 'tessera_tokens_issued_total', { kind: 'admin' }), 3);
    assert.equal(delta(before, after, 'tessera_token_refusals_total', { reason: 'invalid_client', kind: 'admin' }), 2);
    assert.equal(delta(before, after, 'tessera_token_refusals_total', { reason: 'invalid_token', kind: 'none' }), 1);
    assert.equal(delta(before, after, 'tessera_token_refusals_total', { reason: 'invalid_client', kind: 'anonymous' }), 0);
    assert.equal(delta(before, after, 'tessera_tokens_revoked_total', { kind: 'admin' }), 3);
    assert.equal(delta(before, after, 'tessera_tokens_revoked_total', { kind: 'anonymous' }), 1);
    // Admin tokens are written by group commit: three tokens in at most three batches.
    assert.equal(delta(before, after, 'tessera_group_commit_batch_size_sum', { writer: 'tokens' }), 3);
    assert.ok(delta(before, after, 'tessera_group_commit_duration_seconds_count', { writer: 'tokens' }) >= 1);
    assert.ok(delta(before, after, 'tessera_group_commit_batch_size_count', { writer: 'events' }) >= 1);
    assert.ok(delta(before, after, 'tessera_store_operation_duration_seconds_count', { operation: 'tokens.insert' }) === 3);
    assert.equal(after.value('tessera_store_errors_total', { operation: 'tokens.insert' }), 0);
    assert.equal(after.value('tessera_event_write_failures_total'), 0);
  });

  it('count introspections by whether the token was active', async () => {
    const admin = await adminTokenOf(server);
    const anonymous = await anonymousTokenOf(server);
    const before = await scrape(metricsUrl);
    assert.equal((await introspectToken(server.appUrl, anonymous, bearer(admin))).body.active, true);
    assert.equal((await introspectToken(server.appUrl, admin, bearer(admin))).body.active, true);
    assert.equal((await introspectToken(server.appUrl, 'garbage', bearer(admin))).body.active, false);
    const after = await scrape(metricsUrl);
    assert.equal(delta(before, after, 'tessera_introspections_total', { active: 'true' }), 2);
    assert.equal(delta(before, after, 'tessera_introspections_total', { active: 'false' }), 1);
  });

  it('count forward-authentication decisions', async () => {
    const anonymous = await anonymousTokenOf(server);
    const app = `/api/apps/${server.app.appId}`;
    const before = await scrape(metricsUrl);
    assert.equal((await forwardAuth(`${app}/whoami`, bearer(anonymous))).status, 200);
    assert.equal((await forwardAuth(`${app}/objects`, basic(server.app.appId))).status, 200);
    assert.equal((await forwardAuth(`${app}/whoami`)).status, 401);
    assert.equal((await forwardAuth(`${app}/configuration`, bearer(anonymous))).status, 403);
    assert.equal((await request(`${server.baseUrl}/api/forward-auth`)).status, 400);
    const after = await scrape(metricsUrl);
    assert.equal(delta(before, after, 'tessera_forward_auth_decisions_total', { decision: 'allowed' }), 2);
    assert.equal(delta(before, after, 'tessera_forward_auth_decisions_total', { decision: 'unauthenticated' }), 1);
    assert.equal(delta(before, after, 'tessera_forward_auth_decisions_total', { decision: 'forbidden' }), 1);
    assert.equal(delta(before, after, 'tessera_forward_auth_decisions_total', { decision: 'error' }), 1);
  });

  it('count 429s by limit, and the refusals before them', async () => {
    const other = await server.tessera.apps.create('Throttled app');
    const target = { app: other, appUrl: `${server.baseUrl}/api/apps/${other.appId}` };
    const before = await scrape(metricsUrl);
    const statuses: number[] = [];
    for (let i = 0; i < ADMIN_FAILURES_PER_ADDRESS + 3; i++) {
      statuses.push((await requestToken(target, adminFields(target, { client_secret: 'wrong' }))).status);
    }
    const refused = statuses.filter((status) => status === 401).length;
    const throttled = statuses.filter((status) => status === 429).length;
    assert.ok(throttled >= 1, statuses.join(' '));
    assert.equal(refused + throttled, statuses.length);
    const after = await scrapeUntil(
      (scraped) => delta(before, scraped, 'tessera_token_refusals_total', { reason: 'invalid_client', kind: 'admin' }) >= refused,
    );
    assert.equal(delta(before, after, 'tessera_rate_limited_total', { limit: 'admin_failures_per_address' }), throttled);
    assert.equal(delta(before, after, 'tessera_rate_limited_total', { limit: 'token_requests_per_address' }), 0);
    assert.equal(delta(before, after, 'tessera_token_refusals_total', { reason: 'invalid_client', kind: 'admin' }), refused);
    assert.equal(
      delta(before, after, 'tessera_http_request_duration_seconds_count', {
        route: '/api/apps/:appId/oauth2/token',
        method: 'POST',
        status_class: '4xx',
      }),
      statuses.length,
    );
  });
});

describe('metrics of requests', () => {
  it('label requests with the route template, method and status class, never the raw URL', async () => {
    const admin = await adminTokenOf(server);
    const before = await scrape(metricsUrl);
    assert.equal((await request(`${server.appUrl}/events`, { headers: { authorization: bearer(admin) } })).status, 200);
    assert.equal((await whoami(server.appUrl, basic(server.app.appId))).status, 200);
    assert.equal((await request(`${server.baseUrl}/no/such/${randomBytes(6).toString('hex')}`)).status, 404);
    const after = await scrape(metricsUrl);
    const count = (labels: Record<string, string>) => delta(before, after, 'tessera_http_request_duration_seconds_count', labels);
    assert.equal(count({ route: '/api/apps/:appId/events', method: 'GET', status_class: '2xx' }), 1);
    assert.equal(count({ route: '/api/apps/:appId/whoami', method: 'GET', status_class: '2xx' }), 1);
    assert.equal(count({ route: 'unmatched', method: 'GET', status_class: '4xx' }), 1);
    const routes = new Set(
      after.samples.filter((sample) => sample.name === 'tessera_http_request_duration_seconds_count').map((sample) => sample.labels.route),
    );
    for (const route of routes) assert.ok(route === 'unmatched' || (route!.startsWith('/') && !route!.includes(server.app.appId)), route);
    // Each series is a histogram: its +Inf bucket counts every request.
    const inf = after.value('tessera_http_request_duration_seconds_bucket', {
      route: '/api/apps/:appId/whoami',
      method: 'GET',
      status_class: '2xx',
      le: '+Inf',
    });
    assert.equal(
      inf,
      after.value('tessera_http_request_duration_seconds_count', { route: '/api/apps/:appId/whoami', method: 'GET', status_class: '2xx' }),
    );
  });

  it('add no series for 1000 requests with random AppIDs, paths and methods', async () => {
    const randomId = () => randomBytes(6).toString('hex');
    const requests = [
      () => request(`${server.baseUrl}/api/apps/${randomId()}/whoami`, { headers: { authorization: basic(randomId()) } }),
      () => request(`${server.baseUrl}/api/apps/${randomId()}/events`),
      () => request(`${server.baseUrl}/${randomId()}/${randomId()}`),
      () => request(`${server.baseUrl}/${randomId()}`, { method: 'PATCH' }),
      () =>
        requestToken(
          { app: { ...server.app, appId: randomId() }, appUrl: `${server.baseUrl}/api/apps/${randomId()}` },
          anonymousFields(server),
        ),
      () => forwardAuth(`/api/apps/${randomId()}/${randomId()}`, basic(randomId())),
    ];
    // Once each first: the series these kinds of request make.
    for (const send of requests) await send();
    const before = await scrape(metricsUrl);
    for (let round = 0; round < 1000 / 50; round++) {
      await Promise.all(Array.from({ length: 50 }, (_, index) => requests[(round * 50 + index) % requests.length]!()));
    }
    const after = await scrape(metricsUrl);
    assert.deepEqual(
      [...after.seriesKeys('tessera_')].filter((key) => !before.seriesKeys('tessera_').has(key)),
      [],
    );
    assert.equal(after.seriesKeys('tessera_').size, before.seriesKeys('tessera_').size);
  });
});

describe('strangers', () => {
  // One read, then none for 10 s. On PostgreSQL a late heartbeat on a loaded machine empties the
  // caches (PG_STALE_LIMIT_MS, every 250 ms until one is heard), which makes it read once more: a
  // handful at most, against the 201 reads of one a request.
  const assertFewReads = (count: number) => assert.ok(count >= 1 && count <= 4, `${count} reads of the store for 201 requests`);
  const reads = (scraped: Scrape, operation: string) => scraped.value('tessera_store_operation_duration_seconds_count', { operation });
  const send200 = (send: () => Promise<{ status: number }>, status: number) =>
    Promise.all(
      Array.from({ length: 200 }, async () => {
        assert.equal((await send()).status, status);
      }),
    );

  it('cost one read of the store for a made-up AppID, however often it comes, not one a request', async () => {
    const madeUp = randomBytes(8).toString('hex');
    const send = () => whoami(`${server.baseUrl}/api/apps/${madeUp}`, basic(madeUp));
    const before = await scrape(metricsUrl);
    assert.equal((await send()).status, 404);
    await send200(send, 404);
    assertFewReads(reads(await scrape(metricsUrl), 'apps.findById') - reads(before, 'apps.findById'));
  });

  it('cost one read of the store for a made-up token, however often it comes', async () => {
    const madeUp = randomBytes(32).toString('base64url');
    const send = () => whoami(server.appUrl, bearer(madeUp));
    const before = await scrape(metricsUrl);
    assert.equal((await send()).status, 401);
    await send200(send, 401);
    assertFewReads(reads(await scrape(metricsUrl), 'tokens.findBySelector') - reads(before, 'tokens.findBySelector'));
  });
});

describe('the metrics listener', () => {
  it('is not the API listener, and the API has no /metrics', async () => {
    assert.notEqual(new URL(metricsUrl).port, new URL(server.baseUrl).port);
    assert.equal(new URL(metricsUrl).hostname, '127.0.0.1');
    assert.equal((await request(`${server.baseUrl}/metrics`)).status, 404);
  });

  it('answers GET /metrics in Prometheus text, with the store up and the build', async () => {
    const response = await fetch(metricsUrl);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const scraped = await scrape(metricsUrl);
    const backend = server.testStore.store.backend;
    assert.equal(scraped.value('tessera_store_up', { backend }), 1);
    assert.equal(scraped.value('tessera_change_signal_up', { backend }), 1);
    assert.equal(scraped.samples.filter((sample) => sample.name === 'tessera_build_info').length, 1);
    assert.ok(scraped.value('process_cpu_seconds_total') > 0);
    assert.ok(scraped.samples.some((sample) => sample.name === 'nodejs_heap_size_used_bytes'));
    assert.equal(typeof scraped.value('tessera_event_buffer_events'), 'number');
    // No series twice (Prometheus would refuse the whole scrape), HEAD and 405 routes included.
    await request(server.appUrl.replace(/\/api\/apps\/.*/, '/openapi.json'), { method: 'HEAD' });
    await request(`${server.baseUrl}/openapi.json`, { method: 'DELETE' });
    const again = await scrape(metricsUrl);
    assert.equal(again.seriesKeys().size, again.samples.length);
  });

  it('answers Prometheus text (0.0.4) even to a scraper that prefers OpenMetrics', async () => {
    const response = await fetch(metricsUrl, {
      headers: { accept: 'application/openmetrics-text; version=1.0.0, text/plain; version=0.0.4; q=0.5' },
    });
    assert.equal(response.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    assert.match(text, /^# TYPE tessera_tokens_issued_total counter$/m);
    assert.match(text, /^tessera_tokens_issued_total\{kind="anonymous"\} \d+$/m);
  });

  it('answers 404 in JSON for any other path, and 405 for other methods', async () => {
    const origin = new URL(metricsUrl).origin;
    const missing = await request(`${origin}/other`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.errorCode, 'NOT_FOUND');
    const posted = await request(metricsUrl, { method: 'POST' });
    assert.equal(posted.status, 405);
    assert.equal(posted.headers.get('allow'), 'GET, HEAD');
  });
});

describe('METRICS_PORT and METRICS_HOST', () => {
  it('are off when unset, on loopback by default, and checked', () => {
    assert.equal(loadConfig({}).metrics, undefined);
    assert.equal(loadConfig({ METRICS_PORT: '' }).metrics, undefined);
    assert.deepEqual(loadConfig({ METRICS_PORT: '0' }).metrics, { host: '127.0.0.1', port: 0 });
    assert.deepEqual(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metrics, { host: '0.0.0.0', port: 9464 });
    for (const port of ['x', '-1', '65536', '9464.5']) assert.throws(() => loadConfig({ METRICS_PORT: port }), ConfigError);
    assert.throws(() => loadConfig({ METRICS_PORT: '9464', METRICS_HOST: 'a b' }), ConfigError);
  });
});
