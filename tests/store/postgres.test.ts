import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { makeApp } from '../helpers/fixtures.js';
import { createPostgresDatabase, createPostgresTestStore } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { assertMigratedEvents, eventsBeforeMigration4 } from './events-before-migration-4.js';
import { storeSuite } from './store-suite.js';

storeSuite('postgres', createPostgresTestStore);

describe('PostgreSQL store specifics', () => {
  it('migration 4 keeps every event written before it, and trims refusals apart from the rest', async () => {
    const database = await createPostgresDatabase();
    const appId = 'legacy-events-app';
    try {
      const client = new pg.Client({ connectionString: database.databaseUrl });
      await client.connect();
      try {
        await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
        for (const migration of POSTGRES_MIGRATIONS.filter(({ version }) => version <= 2)) {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [migration.version]);
        }
        for (const event of eventsBeforeMigration4(appId)) {
          await client.query('INSERT INTO events (app_id, type, at, principal, client_address, details) VALUES ($1, $2, $3, $4, $5, $6)', [
            event.appId,
            event.type,
            event.at,
            event.principal,
            event.clientAddress,
            JSON.stringify(event.details),
          ]);
        }
      } finally {
        await client.end();
      }
      const store = await openPostgresStore(database.databaseUrl);
      try {
        await assertMigratedEvents(store, appId);
      } finally {
        await store.close();
      }
    } finally {
      await database.drop();
    }
  });

  it('migrates a new database once when several instances open it at the same moment', async () => {
    const database = await createPostgresDatabase();
    try {
      const stores = await Promise.all(Array.from({ length: 5 }, () => openPostgresStore(database.databaseUrl)));
      await Promise.all(stores.map((store) => store.close()));
      const client = new pg.Client({ connectionString: database.databaseUrl });
      await client.connect();
      const versions = (await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
      await client.end();
      assert.deepEqual(versions.map((row) => row.version), POSTGRES_MIGRATIONS.map((migration) => migration.version));
    } finally {
      await database.drop();
    }
  });

  it('opens an up-to-date database with a role that may only read (another service\'s verifier)', async () => {
    const database = await createPostgresDatabase();
    const role = `tessera_reader_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new pg.Client({ connectionString: database.databaseUrl });
    await admin.connect();
    try {
      const writer = await openPostgresStore(database.databaseUrl);
      const app = makeApp();
      await writer.apps.insert(app);
      await writer.close();
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
      await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      const url = new URL(database.databaseUrl);
      url.username = role;
      const reader = await openPostgresStore(url.toString());
      try {
        assert.deepEqual(await reader.apps.findById(app.appId), app);
        await assert.rejects(reader.apps.insert(makeApp()), /permission denied/);
      } finally {
        await reader.close();
      }
    } finally {
      await admin.query(`DROP OWNED BY ${role}`).catch(() => {});
      await admin.end();
      await database.drop();
      const cleanup = new pg.Client({ connectionString: database.databaseUrl.replace(/\/[^/]*$/, '/test') });
      await cleanup.connect();
      await cleanup.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
      await cleanup.end();
    }
  });

  it('answers 503 SERVICE_UNAVAILABLE, not a hang, while the database is unreachable, and recovers by itself', async () => {
    const database = await createPostgresDatabase();
    const target = new URL(database.databaseUrl);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const store = await openPostgresStore(proxy.urlFor(database.databaseUrl), { connectTimeoutMs: 500, queryTimeoutMs: 1_000 });
    try {
      await store.apps.count();
      await proxy.cut();
      for (const operation of [() => store.apps.findById('0123456789abcdef'), () => store.apps.count(), () => store.ping()]) {
        const started = Date.now();
        await assert.rejects(operation(), (error: { code?: string; status?: number; details?: { retryAfterSeconds?: number } }) => {
          assert.equal(error.code, 'SERVICE_UNAVAILABLE');
          assert.equal(error.status, 503);
          assert.ok((error.details?.retryAfterSeconds ?? 0) > 0);
          return true;
        });
        assert.ok(Date.now() - started < 3_000, 'answered within the timeouts');
      }
      await proxy.restore();
      const deadline = Date.now() + 5_000;
      for (;;) {
        try {
          await store.ping();
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      assert.equal(await store.apps.count(), 0);
    } finally {
      await store.close();
      await proxy.cut();
      await database.drop();
    }
  });
});
