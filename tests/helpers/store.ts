import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';

export interface TestStore {
  store: Store;
  /** What `DATABASE_URL` must be for another process (CLI, server) to open the same store. */
  databaseUrl: string;
  /** Closes the store and removes everything it created. */
  dispose(): Promise<void>;
}

/**
 * A fresh, empty store for one test file. `TEST_STORE` picks the backend (default `sqlite`), so that
 * the same suites run against every backend.
 */
export async function createTestStore(): Promise<TestStore> {
  const backend = process.env.TEST_STORE ?? 'sqlite';
  if (backend !== 'sqlite') throw new Error(`TEST_STORE=${backend} is not supported yet`);
  const dir = mkdtempSync(join(tmpdir(), 'tessera-test-'));
  const path = join(dir, 'tessera.db');
  const store = openSqliteStore(path, { changePollIntervalMs: 100 });
  return {
    store,
    databaseUrl: `sqlite:${path}`,
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
