import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { after, describe, it } from 'node:test';
import Database from 'libsql';
import pg from 'pg';
import { bearer, tokenRequestInit } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { createPostgresTestStore, createSqliteTestStore, type TestStore } from '../helpers/store.js';

/**
 * Issue #13's storage test: 20,000 anonymous tokens issued and each used once, over HTTP, on each
 * store. Nothing may grow but the bounded event counts (one row per app, minute, type and kind):
 * no token row, no event row, and the database's size within a few pages.
 */

const TOKENS = 20_000;
const CONCURRENCY = 32;
/** Pages a store may add for the counts and its own bookkeeping (WAL frames folded in, statistics). */
const SIZE_SLACK_BYTES = 256 * 1024;

interface Footprint {
  rows: Record<string, number>;
  bytes: number;
}

interface Backend {
  name: string;
  create(): Promise<TestStore>;
  footprint(testStore: TestStore): Promise<Footprint>;
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite',
    create: createSqliteTestStore,
    async footprint(testStore) {
      const path = testStore.databaseUrl.slice('sqlite:'.length);
      const db = new Database(path);
      try {
        db.exec('PRAGMA busy_timeout = 5000');
        // Fold the write-ahead log into the file, so that its size is what is stored.
        db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
        const tables = (
          db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]
        ).map((row) => row.name);
        const rows = Object.fromEntries(
          tables.map((table) => [table, (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n]),
        );
        return { rows, bytes: statSync(path).size };
      } finally {
        db.close();
      }
    },
  },
  {
    name: 'PostgreSQL',
    create: createPostgresTestStore,
    async footprint(testStore) {
      const client = new pg.Client({ connectionString: testStore.databaseUrl });
      await client.connect();
      try {
        const tables = (
          await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'")
        ).rows.map((row) => row.name);
        const rows: Record<string, number> = {};
        let bytes = 0;
        for (const table of tables) {
          rows[table] = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`)).rows[0]!.n);
          bytes += Number(
            (await client.query<{ size: string }>('SELECT pg_total_relation_size($1::regclass) AS size', [table])).rows[0]!.size,
          );
        }
        return { rows, bytes };
      } finally {
        await client.end();
      }
    },
  },
];

/**
 * One request over a kept-alive connection, with node:http rather than fetch: fetch costs several
 * times the server's own work a request, and the test sends 80,000 of them on one core.
 */
function send(agent: Agent, url: string, init: RequestInit): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { agent, method: init.method ?? 'GET', headers: init.headers as Record<string, string> }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      response.on('error', reject);
    });
    sent.on('error', reject);
    sent.end(init.body as string | undefined);
  });
}

/** Runs `work(i)` for i in [0, count) with at most `concurrency` at a time. */
async function pooled(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

for (const backend of BACKENDS) {
  describe(`storage of anonymous tokens: ${backend.name}`, () => {
    let server: TestServer | undefined;
    let testStore: TestStore | undefined;
    after(async () => {
      await server?.close();
      await testStore?.dispose();
    });

    it(`${TOKENS} anonymous tokens issued and used grow nothing but the bounded event counts`, async () => {
      testStore = await backend.create();
      server = await startServer({ testStore });
      const { appId, appKey } = server.app;
      const fields = { grant_type: 'client_credentials', client_id: appId, client_secret: appKey };
      // Warm up: the first token and check read the keys and the revocations.
      const first = await fetch(`${server.appUrl}/oauth2/token`, tokenRequestInit(appId, fields));
      assert.equal(first.status, 200);
      await server.tessera.events.flush();
      const before = await backend.footprint(testStore);
      const startedAt = Date.now();

      const failures: string[] = [];
      const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
      await pooled(TOKENS, CONCURRENCY, async () => {
        const issued = await send(agent, `${server!.appUrl}/oauth2/token`, tokenRequestInit(appId, fields));
        const body = JSON.parse(issued.body) as { access_token?: string };
        if (issued.status !== 200 || body.access_token === undefined) return void failures.push(`token: ${issued.status}`);
        const used = await send(agent, `${server!.appUrl}/whoami`, { headers: { authorization: bearer(body.access_token) } });
        if (used.status !== 200) failures.push(`whoami: ${used.status}`);
      });
      agent.destroy();
      assert.deepEqual(failures.slice(0, 5), [], `${failures.length} requests failed`);
      await server.tessera.events.flush();
      const after = await backend.footprint(testStore);

      // The counts: at most one row per minute spanned, per (type, kind) recorded: here one.
      const minutes = Math.ceil((Date.now() - startedAt) / 60_000) + 1;
      const grown = Object.fromEntries(Object.keys(after.rows).map((table) => [table, after.rows[table]! - (before.rows[table] ?? 0)]));
      for (const [table, growth] of Object.entries(grown)) {
        if (table === 'event_counts') assert.ok(growth <= minutes, `event_counts grew by ${growth} rows in ${minutes} minute(s)`);
        else assert.equal(growth, 0, `${table} grew by ${growth} rows: ${JSON.stringify(grown)}`);
      }
      const bytes = after.bytes - before.bytes;
      console.log(
        `[storage] ${backend.name}: ${TOKENS} anonymous tokens issued and used; rows grown ${JSON.stringify(grown)}; bytes ${before.bytes} → ${after.bytes} (${bytes >= 0 ? '+' : ''}${bytes})`,
      );
      assert.ok(bytes <= SIZE_SLACK_BYTES, `the database grew by ${bytes} bytes`);
    });
  });
}
