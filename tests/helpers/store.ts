import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';

export interface TestStore {
  store: Store;
  /** What `DATABASE_URL` must be for another process (CLI, server) to open the same store. */
  databaseUrl: string;
  /** Closes the store and removes everything it created. */
  dispose(): Promise<void>;
}

/** Where PostgreSQL tests create their databases: a server and a database to connect to first. */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * A fresh, empty store for one test file. `TEST_STORE` picks the backend (default `sqlite`), so that
 * the same suites run against every backend.
 */
export async function createTestStore(): Promise<TestStore> {
  const backend = process.env.TEST_STORE ?? 'sqlite';
  if (backend === 'sqlite') return createSqliteTestStore();
  if (backend === 'postgres') return createPostgresTestStore();
  throw new Error(`TEST_STORE must be sqlite or postgres, not ${backend}`);
}

export async function createSqliteTestStore(): Promise<TestStore> {
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

/** A new database on the test server (`TEST_POSTGRES_URL`), dropped by `dispose`. */
export async function createPostgresTestStore(): Promise<TestStore> {
  const { databaseUrl, drop } = await createPostgresDatabase();
  const store = await openPostgresStore(databaseUrl);
  return {
    store,
    databaseUrl,
    async dispose() {
      await store.close();
      await drop();
    },
  };
}

export async function createPostgresDatabase(): Promise<{ databaseUrl: string; drop: () => Promise<void> }> {
  const name = `tessera_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${POSTGRES_ADMIN_URL} (set TEST_POSTGRES_URL): ${(error as Error).message}`, {
      cause: error,
    });
  }
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
