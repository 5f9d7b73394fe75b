import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { currentBuild } from 'tessera-tokens/internal/release.js';
import { migrationRecord } from 'tessera-tokens/internal/store/schema.js';
import { migrate, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { openSqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite/store.js';

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

export async function createSqliteTestStore(options: SqliteStoreOptions = {}): Promise<TestStore> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-test-'));
  const path = join(dir, 'tessera.db');
  const store = openSqliteStore(path, { changePollIntervalMs: 100, ...options });
  return {
    store,
    databaseUrl: `sqlite:${path}`,
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A new database on the test server (`TEST_POSTGRES_URL`), dropped by `dispose`: a copy of a migrated
 * template, since a store suite makes one for each of its hundred tests, and migrating each took
 * most of the time of the suite.
 */
export async function createPostgresTestStore(): Promise<TestStore> {
  const { databaseUrl, drop } = await createPostgresDatabase({ migrated: true });
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

/**
 * A new database on the test server, empty, or with `migrated` a copy of the template of this
 * build's migrations (`migratedTemplate`).
 */
export async function createPostgresDatabase({ migrated = false } = {}): Promise<{ databaseUrl: string; drop: () => Promise<void> }> {
  const name = `tessera_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = migrated ? await migratedTemplate() : undefined;
  const admin = await adminClient();
  try {
    await admin.query(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`);
  } finally {
    await admin.end();
  }
  return {
    databaseUrl: databaseUrlOf(name),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

async function adminClient(): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${POSTGRES_ADMIN_URL} (set TEST_POSTGRES_URL): ${(error as Error).message}`, {
      cause: error,
    });
  }
  return admin;
}

function databaseUrlOf(name: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

let template: Promise<string> | undefined;

/**
 * A database migrated by this build's migrations and nothing else (no instance, no event), named by
 * a hash of them, made once for every test process of this build: the first makes it under another
 * name and renames it when it is complete, so that no process copies a template half made. Never
 * connected to once made, as `CREATE DATABASE … TEMPLATE` requires. Templates are not dropped:
 * checkouts of other builds may be copying theirs at the same moment; there is one for each set of
 * migrations and release, a few kilobytes of catalogue each.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    // The release is in the hash too: the migrations' records name it.
    const hash = createHash('sha256').update(JSON.stringify([migrationRecord(currentBuild()), POSTGRES_MIGRATIONS]));
    const name = `tessera_test_template_${hash.digest('hex').slice(0, 12)}`;
    const admin = await adminClient();
    try {
      const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (found.rowCount === 0) {
        const making = `tessera_test_making_${process.pid}_${randomBytes(4).toString('hex')}`;
        await admin.query(`CREATE DATABASE ${making}`);
        const pool = new pg.Pool({ connectionString: databaseUrlOf(making), max: 1 });
        try {
          await migrate(pool);
        } finally {
          await pool.end();
        }
        try {
          await admin.query(`ALTER DATABASE ${making} RENAME TO ${name}`);
        } catch (error) {
          // Another process made it first (42P04, duplicate database; 23505 when both renamed at
          // the same moment): theirs serves.
          await admin.query(`DROP DATABASE ${making}`);
          if (!['42P04', '23505'].includes((error as { code?: string }).code ?? '')) throw error;
        }
      }
      return name;
    } finally {
      await admin.end();
    }
  })();
  return template;
}
