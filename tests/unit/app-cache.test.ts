import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { AppCache, appEntryBytes } from 'tessera-tokens/internal/apps/cache.js';
import type { AppStore } from '../../src/apps/store.js';
import { ABSENT_TTL_MS } from 'tessera-tokens/internal/cache/absent-keys.js';
import { systemClock } from 'tessera-tokens/internal/clock.js';
import { FakeClock } from '../helpers/clock.js';
import { makeApp } from '../helpers/fixtures.js';

const OPTIONS = { maxBytes: 1_000_000, absentBytes: 100_000, clock: systemClock };

/** An AppStore over a Map that answers at once, as SQLite's does, and counts its reads. */
function storeOf(apps: AppRecord[]) {
  const byId = new Map(apps.map((app) => [app.appId, app]));
  const store = {
    reads: 0,
    byId,
    findById(appId: string) {
      store.reads++;
      return byId.get(appId);
    },
  };
  return store as unknown as AppStore & { reads: number; byId: Map<string, AppRecord> };
}

/** An AppStore whose reads wait until the test releases them, and that counts them. */
function slowStore(app: AppRecord) {
  const waiting: (() => void)[] = [];
  let version = app;
  const store = {
    reads: 0,
    async findById(appId: string) {
      store.reads++;
      const seen = version;
      await new Promise<void>((resolve) => waiting.push(resolve));
      return appId === seen.appId ? seen : undefined;
    },
  };
  return {
    store: store as unknown as AppStore & { reads: number },
    release: () => waiting.splice(0).forEach((resolve) => resolve()),
    update: (next: AppRecord) => (version = next),
  };
}

describe('AppCache', () => {
  it('lets requests that miss at the same time share one read', async () => {
    const app = makeApp();
    const { store, release } = slowStore(app);
    const cache = new AppCache(store, OPTIONS);
    const reads = Array.from({ length: 50 }, () => cache.get(app.appId));
    assert.equal(store.reads, 1);
    release();
    for (const read of reads) assert.deepEqual(await read, app);
    assert.deepEqual(cache.get(app.appId), app, 'then answered from memory');
    assert.equal(store.reads, 1);
  });

  it('does not share a read begun before an invalidation with a request made after it', async () => {
    const app = makeApp();
    const { store, release, update } = slowStore(app);
    const cache = new AppCache(store, OPTIONS);
    const before = cache.get(app.appId);
    const changed = { ...app, name: 'changed' };
    update(changed);
    cache.invalidate(app.appId);
    const after = cache.get(app.appId);
    assert.equal(store.reads, 2);
    release();
    assert.deepEqual(await before, app);
    assert.deepEqual(await after, changed);
    assert.deepEqual(await cache.get(app.appId), changed);
  });

  it('answers a store that answers at once at once, without a promise', () => {
    const app = makeApp();
    const cache = new AppCache(storeOf([app]), OPTIONS);
    assert.deepEqual(cache.get(app.appId), app);
    assert.equal(cache.get('0123456789abcdef'), undefined);
  });

  it('reads an AppID the store does not have once, then answers it absent from memory until ABSENT_TTL_MS has passed', () => {
    const clock = new FakeClock();
    const store = storeOf([]);
    const cache = new AppCache(store, { ...OPTIONS, clock });
    for (let i = 0; i < 100; i++) assert.equal(cache.get('0123456789abcdef'), undefined);
    assert.equal(store.reads, 1);
    clock.advance(ABSENT_TTL_MS);
    assert.equal(cache.get('0123456789abcdef'), undefined);
    assert.equal(store.reads, 1);
    clock.advance(1);
    assert.equal(cache.get('0123456789abcdef'), undefined);
    assert.equal(store.reads, 2, 'asked again once the time is up');
  });

  it('forgets an absent AppID when the change signal names it, or names everything: an app created or imported with it is found at once', () => {
    const store = storeOf([]);
    const cache = new AppCache(store, OPTIONS);
    const app = makeApp();
    assert.equal(cache.get(app.appId), undefined);
    store.byId.set(app.appId, app);
    assert.equal(cache.get(app.appId), undefined, 'still absent: nothing said it appeared');
    cache.invalidate(app.appId);
    assert.deepEqual(cache.get(app.appId), app);

    const other = makeApp();
    assert.equal(cache.get(other.appId), undefined);
    store.byId.set(other.appId, other);
    cache.invalidate();
    assert.deepEqual(cache.get(other.appId), other);
  });

  it('does not remember as absent what a read begun before an invalidation did not find', async () => {
    const app = makeApp();
    const { store, release, update } = slowStore(makeApp());
    const cache = new AppCache(store, OPTIONS);
    const before = cache.get(app.appId);
    update(app);
    cache.invalidate(app.appId);
    release();
    assert.equal(await before, undefined);
    const after = cache.get(app.appId);
    release();
    assert.deepEqual(await after, app);
  });

  it('keeps within its budget in bytes, and keeps the apps in use: the least recently used go first', () => {
    const apps = Array.from({ length: 100 }, () => makeApp());
    const store = storeOf(apps);
    const budget = 10 * appEntryBytes(apps[0]!);
    const cache = new AppCache(store, { ...OPTIONS, maxBytes: budget });
    const [first] = apps;
    for (const app of apps) {
      void cache.get(app.appId);
      void cache.get(first!.appId);
    }
    const reads = store.reads;
    assert.deepEqual(cache.get(first!.appId), first, 'the one used all along is still there');
    assert.deepEqual(cache.get(apps[99]!.appId), apps[99]);
    assert.equal(store.reads, reads, 'both from memory');
    void cache.get(apps[50]!.appId);
    assert.equal(store.reads, reads + 1, 'one long unused is gone');
  });

  it('gives an app with a long name and many origins a larger share of the budget', () => {
    const plain = makeApp();
    const large = makeApp({
      name: 'x'.repeat(200),
      configuration: { ...plain.configuration, allowedOrigins: Array.from({ length: 20 }, (_, i) => `https://app${i}.example.com`) },
    });
    assert.ok(appEntryBytes(large) > appEntryBytes(plain) + 400);
  });
});
