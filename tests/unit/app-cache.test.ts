import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppRecord } from '../../src/apps/app.js';
import { AppCache } from '../../src/apps/cache.js';
import type { AppStore } from '../../src/apps/store.js';
import { makeApp } from '../helpers/fixtures.js';

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
    const cache = new AppCache(store);
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
    const cache = new AppCache(store);
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
});
