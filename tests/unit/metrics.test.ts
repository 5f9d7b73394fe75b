import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock } from 'tessera-tokens/internal/clock.js';
import { EventLog } from '../../src/events/log.js';
import type { EventStore } from '../../src/events/store.js';
import { instrumentStore } from '../../src/prometheus/instrumented-store.js';
import { NO_METRICS, type Metrics } from '../../src/metrics/port.js';
import { OPERATOR } from '../../src/request-context.js';
import { HistogramSeries, RouteSeries, statusClassIndex } from '../../src/prometheus/series.js';
import type { Store } from '../../src/store/store.js';

// The metrics' plain-number series (src/prometheus/series.ts) and the timed store, without prom-client.

describe('HistogramSeries', () => {
  it('counts each value in the first bucket whose bound it does not exceed, and gives cumulative counts', () => {
    const series = new HistogramSeries({ writer: 'tokens' }, [1, 5, 10]);
    for (const value of [0.5, 1, 3, 5, 7, 100]) series.observe(value);
    assert.equal(series.count, 6);
    assert.equal(series.sum, 116.5);
    assert.deepEqual(series.cumulative(), [
      { le: '1', count: 2 },
      { le: '5', count: 4 },
      { le: '10', count: 5 },
      { le: '+Inf', count: 6 },
    ]);
  });
});

describe('RouteSeries', () => {
  it('makes one series per method and status class, on first use, with closed label values', () => {
    const route = new RouteSeries('/api/apps/:appId/whoami', [1]);
    route.observe('GET', 200, 0.5);
    route.observe('GET', 204, 2);
    route.observe('GET', 404, 0.5);
    route.observe('BREW', 405, 0.5);
    route.observe('PROPFIND', 405, 0.5);
    const series = [...route.series()].map((one) => ({ ...one.labels, count: one.count }));
    assert.deepEqual(series, [
      { route: '/api/apps/:appId/whoami', method: 'GET', status_class: '2xx', count: 2 },
      { route: '/api/apps/:appId/whoami', method: 'GET', status_class: '4xx', count: 1 },
      { route: '/api/apps/:appId/whoami', method: 'other', status_class: '4xx', count: 2 },
    ]);
  });

  it('reads status codes outside 100–599 as 5xx', () => {
    assert.deepEqual([100, 199, 200, 302, 404, 503, 599].map(statusClassIndex), [0, 0, 1, 2, 3, 4, 4]);
    assert.deepEqual([0, 99, 600, 999].map(statusClassIndex), [4, 4, 4, 4]);
  });
});

describe('instrumentStore', () => {
  const fakeStore = () => {
    const apps = {
      count: async () => 3,
      findById: async (appId: string) => {
        if (appId === 'broken') throw new Error('unreachable');
        return undefined;
      },
      sync: () => 'now',
    };
    return {
      backend: 'sqlite',
      apps,
      tokens: {},
      revokedTokens: {},
      signingKeys: {},
      jwtKeys: {},
      statusLists: {},
      events: {},
      developers: {},
      onceClaims: {},
      attestation: {},
      upgrade: {},
      credentials: {},
      webhooks: {},
      ping: async () => {},
      // The tables of a transaction: the same parts, another object (as a runner bound to it gives).
      transaction: async <T>(work: (tx: unknown) => Promise<T>) => work({ apps: { ...apps }, events: {}, tokens: {} }),
    } as unknown as Store;
  };

  it('times each call by operation and counts failures, returning what the store returns', async () => {
    const { store, operations } = instrumentStore(fakeStore());
    const byName = new Map(operations.map((operation) => [operation.name, operation]));
    assert.deepEqual([...byName.keys()].sort(), ['apps.count', 'apps.findById', 'apps.sync', 'transaction']);
    assert.equal(await store.apps.count(), 3);
    assert.equal(await store.apps.findById('x'), undefined);
    await assert.rejects(async () => store.apps.findById('broken'), /unreachable/);
    assert.equal((store.apps as unknown as { sync(): string }).sync(), 'now');
    assert.equal(byName.get('apps.count')!.durations.count, 1);
    assert.equal(byName.get('apps.findById')!.durations.count, 1);
    assert.equal(byName.get('apps.findById')!.errors.value, 1);
    assert.equal(byName.get('apps.sync')!.durations.count, 1);
    assert.equal(store.backend, 'sqlite');
  });

  it("times a transaction whole, and its tables' calls under the same operations as the store's own", async () => {
    const { store, operations } = instrumentStore(fakeStore());
    const byName = new Map(operations.map((operation) => [operation.name, operation]));
    assert.equal(await store.transaction(async (tx) => (await tx.apps.count()) + (await tx.apps.count())), 6);
    await assert.rejects(
      store.transaction(async (tx) => tx.apps.findById('broken')),
      /unreachable/,
    );
    assert.equal(byName.get('apps.count')!.durations.count, 2);
    assert.equal(byName.get('apps.findById')!.errors.value, 1);
    assert.equal(byName.get('transaction')!.durations.count, 1);
    assert.equal(byName.get('transaction')!.errors.value, 1);
    assert.equal(operations.length, 4, 'no operation of its own for a transaction\u2019s table');
  });
});

describe('EventLog and the metrics', () => {
  it('tells the counts of each flush, each batch written, each failed write, and what is not written yet', async () => {
    const told: string[] = [];
    const metrics: Metrics = {
      ...NO_METRICS,
      eventsCounted: (type, principal, reason, count) => told.push(`counted ${type} ${principal} ${reason} ${count}`),
      batchWritten: (writer, size) => told.push(`written ${writer} ${size}`),
      eventWriteFailed: () => told.push('failed'),
      eventsLost: (part, reason, count) => told.push(`lost ${part} ${reason} ${count}`),
    };
    let failAppend = true;
    const store = {
      append: async () => {
        if (failAppend) throw new Error('disk full');
      },
      addCounts: async () => {},
    } as unknown as EventStore;
    const errors: unknown[] = [];
    const log = new EventLog(store, systemClock, { onWarning: (_message, error) => errors.push(error), metrics });
    log.record('token.issued', 'app1', OPERATOR, 'anonymous');
    log.record('token.issued', 'app2', OPERATOR, 'anonymous');
    log.record('token.refused', 'app1', OPERATOR, 'admin', { reason: 'invalid_client' });
    assert.equal(log.unwritten, 1, 'the refusal is a row to write; anonymous tokens are only counted');
    await log.flush();
    assert.equal(log.unwritten, 0);
    assert.deepEqual(told.sort(), [
      'counted token.issued anonymous null 1',
      'counted token.issued anonymous null 1',
      'counted token.refused admin invalid_client 1',
      'failed',
      'lost events refused 1',
      'written events 3',
    ]);
    assert.equal(errors.length, 1);
    failAppend = false;
    told.length = 0;
    log.record('token.refused', 'app1', OPERATOR, 'admin', { reason: 'invalid_client' });
    await log.flush();
    assert.deepEqual(told.sort(), ['counted token.refused admin invalid_client 1', 'written events 1', 'written events 1']);
  });
});
