import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { openPool } from 'tessera-tokens/internal/store/postgres/connection.js';
import { postgresRunner } from 'tessera-tokens/internal/store/postgres/runner.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { freePort } from '../helpers/process.js';
import { createPostgresDatabase, POSTGRES_ADMIN_URL } from '../helpers/store.js';

// Multi-host URLs and target_session_attrs on the test server alone: a host that is down before it,
// and the database made read-only (ALTER DATABASE … SET default_transaction_read_only) to play a
// server that takes no writes. tests/cluster/multi-host.test.ts runs them through real standbys.

const unavailable = (error: unknown) => isServiceUnavailable(error);

describe('PostgreSQL URLs with several hosts or target_session_attrs', () => {
  let database: { databaseUrl: string; drop: () => Promise<void> };
  let server: string;
  let name: string;
  let down: string;

  /** `postgres://postgres@HOSTS/DATABASE?QUERY`. */
  const urlOf = (hosts: string[], query = '') => `postgres://postgres@${hosts.join(',')}/${name}${query === '' ? '' : `?${query}`}`;
  /** From the admin database: a session on this one would be read-only itself. */
  const setReadOnly = async (on: boolean) => {
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(
        on ? `ALTER DATABASE ${name} SET default_transaction_read_only = on` : `ALTER DATABASE ${name} RESET default_transaction_read_only`,
      );
    } finally {
      await admin.end();
    }
  };

  before(async () => {
    database = await createPostgresDatabase();
    const url = new URL(database.databaseUrl);
    server = `${url.hostname}:${url.port || '5432'}`;
    name = url.pathname.slice(1);
    down = `127.0.0.1:${await freePort()}`;
  });
  after(() => database.drop());

  it('opens the store on the second host when the first is down; its LISTEN connection hears its heartbeats', async () => {
    const warnings: string[] = [];
    const store = await openPostgresStore(urlOf([down, server], 'connect_timeout=1'), { onWarning: (message) => warnings.push(message) });
    try {
      assert.equal(store.changeSignal().up, true, 'the LISTEN connection hears its heartbeats');
      assert.deepEqual(warnings, [], 'finding the host at start is not worth a warning');
    } finally {
      await store.close();
    }
  });

  it('refuses a read-only server for read-write (503, saying why), keeps it for primary (reads work, a write is 503 and its connection dropped), and finds it again once writable', async () => {
    await setReadOnly(true);
    const warnings: string[] = [];
    const readWrite = openPool(urlOf([down, server], 'connect_timeout=1'), { poolSize: 1 }, (message) => warnings.push(message));
    const primary = openPool(urlOf([server], 'target_session_attrs=primary'), { poolSize: 1 }, (message) => warnings.push(message));
    try {
      await assert.rejects(Promise.resolve(postgresRunner(readWrite.pool).get('SELECT 1 AS one')), unavailable);
      await assert.rejects(readWrite.pool.query('SELECT 1'), (error: Error) => {
        // The cause behind the 503: each host and what it is.
        assert.match(
          error.message,
          new RegExp(`no host fits target_session_attrs=read-write: ${down} refused a connection .*; ${server} is read-only`),
        );
        return true;
      });

      const db = postgresRunner(primary.pool);
      assert.deepEqual(await db.get('SELECT 1 AS one'), { one: 1 }, 'a primary made read-only is kept for primary');
      const removed: pg.Client[] = [];
      primary.pool.on('remove', (client) => removed.push(client));
      await assert.rejects(
        Promise.resolve(db.run('CREATE TABLE written (n integer)')),
        unavailable,
        'a write refused with 25006 answers 503',
      );
      for (let waited = 0; removed.length === 0 && waited < 2_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(removed.length, 1, 'the connection that met the 25006 is dropped, not reused');

      await setReadOnly(false);
      // A search that found nothing is not repeated for 250 ms.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const written = postgresRunner(readWrite.pool);
      await written.run('CREATE TABLE written (n integer)');
      assert.equal(await written.run('INSERT INTO written VALUES (1)'), 1);
      assert.ok(
        warnings.every((warning) => !warning.includes('now go to')),
        'no move to tell: the host found is the first one chosen',
      );
    } finally {
      await setReadOnly(false);
      await readWrite.pool.end();
      await primary.pool.end();
    }
  });
});
