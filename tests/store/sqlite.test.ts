import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import Database from 'libsql';
import { openStore } from '../../src/store/open.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { startCheckpointer } from '../../src/store/sqlite/checkpointer.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { openDatabase } from 'tessera-tokens/internal/store/sqlite/connection.js';
import { sqliteRunner } from 'tessera-tokens/internal/store/sqlite/runner.js';
import { makeApp, makeToken } from '../helpers/fixtures.js';
import { createTestStore } from '../helpers/store.js';
import { assertMigratedEvents, eventsBeforeMigration4 } from './events-before-migration-4.js';
import { storeSuite } from './store-suite.js';

storeSuite('sqlite', createTestStore);

/** Reads the file with a raw connection, bypassing the store. */
function inspect<T>(path: string, read: (db: Database.Database) => T): T {
  const db = new Database(path);
  try {
    return read(db);
  } finally {
    db.close();
  }
}

function appliedMigrations(path: string): number[] {
  return inspect(path, (db) => db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[]);
}

describe('SQLite store specifics', () => {
  let dir: string;
  let files = 0;
  const newFile = () => join(dir, `db-${++files}`, 'tessera.db');

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-sqlite-test-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('migration 11 sums the counts per minute written before it into hours, and counts written by any process after it (an earlier release too) roll up', async () => {
    const path = newFile();
    const HOUR = 3_600_000;
    const T = 1_790_000_000_000 - (1_790_000_000_000 % HOUR);
    // A database as the release before migration 11 left it, with counts in two hours.
    const before = new Database((mkdirSync(dirname(path), { recursive: true }), path));
    before.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT');
    for (const migration of SQLITE_MIGRATIONS.filter((step) => step.version < 11)) {
      before.exec(migration.sql);
      before.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(migration.version);
    }
    const insertCount = (db: Database.Database, bucket: number, count: number) =>
      db
        .prepare(
          `INSERT INTO event_counts (app_id, bucket, type, principal, reason, count) VALUES ('a1', ?, 'token.issued', 'admin', '', ?)
           ON CONFLICT (app_id, bucket, type, principal, reason) DO UPDATE SET count = event_counts.count + excluded.count`,
        )
        .run(bucket, count);
    insertCount(before, T + 60_000, 2);
    insertCount(before, T + 120_000, 3);
    insertCount(before, T + HOUR, 5);
    before.close();

    const store = openSqliteStore(path);
    try {
      // As an instance of the earlier release still running would write: straight into the counts per minute.
      inspect(path, (db) => {
        insertCount(db, T + 60_000, 10);
        insertCount(db, T + 2 * HOUR + 60_000, 7);
      });
      await store.events.addCounts([
        { appId: 'a1', bucket: T + 2 * HOUR, type: 'token.issued', principal: 'admin', reason: null, count: 1 },
      ]);
      const hourly = inspect(path, (db) => db.prepare('SELECT bucket, count FROM event_counts_hourly ORDER BY bucket').all());
      assert.deepEqual(
        (hourly as { bucket: number; count: number }[]).map(({ bucket, count }) => [bucket - T, count]),
        [
          [0, 15],
          [HOUR, 5],
          [2 * HOUR, 8],
        ],
      );
      const perDay = await store.events.listCounts({ appId: 'a1', bucketMs: 86_400_000, since: T - (T % 86_400_000), until: T + 3 * HOUR });
      assert.equal(
        perDay.reduce((sum, row) => sum + row.count, 0),
        28,
      );
    } finally {
      await store.close();
    }
  });

  it('keeps apps and tokens across reopening; migrations are applied once', async () => {
    const path = newFile();
    const app = makeApp();
    const token = makeToken(app.appId, { kind: 'admin', expiresAt: Date.now() + 60_000 });
    const first = openSqliteStore(path);
    await first.apps.insert(app);
    await first.tokens.insert(token, 0);
    await first.close();

    for (let i = 0; i < 2; i++) {
      const reopened = openSqliteStore(path);
      try {
        assert.deepEqual(await reopened.apps.findById(app.appId), app);
        assert.deepEqual(await reopened.tokens.findBySelector(token.selector), token);
        assert.equal(await reopened.apps.count(), 1);
      } finally {
        await reopened.close();
      }
    }
    assert.deepEqual(
      appliedMigrations(path),
      SQLITE_MIGRATIONS.map((migration) => migration.version),
    );
  });

  it('creates the file, its WAL and its directory readable by their owner only', async () => {
    const path = newFile();
    const store = openSqliteStore(path);
    try {
      await store.apps.insert(makeApp());
      for (const file of [path, `${path}-wal`, `${path}-shm`]) assert.equal(statSync(file).mode & 0o077, 0, `${file} is open to others`);
      assert.equal(statSync(dirname(path)).mode & 0o077, 0);
    } finally {
      await store.close();
    }
  });

  it('checkpoints on a thread of its own when asked (a serving process), and leaves the log to it', async () => {
    const writeTokens = async (store: ReturnType<typeof openSqliteStore>) => {
      const app = makeApp();
      await store.apps.insert(app);
      for (let i = 0; i < 2_000; i++) await store.tokens.insert(makeToken(app.appId, { kind: 'admin' }), 0);
    };
    // Without the thread, 2,000 tokens stay in the log: the commits' own checkpoint waits for 64 MiB.
    const plainPath = newFile();
    const plain = openSqliteStore(plainPath);
    await writeTokens(plain);
    const plainSize = statSync(plainPath).size;
    // With it, a thread copies the log into the file once it holds 64 pages (256 KiB here).
    const path = newFile();
    const warnings: string[] = [];
    const store = openSqliteStore(path, { checkpointsOffThread: { onWarning: (message) => warnings.push(message), pages: 64 } });
    await writeTokens(store);
    const deadline = Date.now() + 10_000;
    while (statSync(path).size <= plainSize + 256 * 1024 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    try {
      assert.ok(
        statSync(path).size > plainSize + 256 * 1024,
        `the file holds the tokens (${statSync(path).size} bytes, ${plainSize} without the thread)`,
      );
      assert.deepEqual(warnings, []);
    } finally {
      await plain.close();
      await store.close();
    }
    // Closing stopped the thread and moved the rest of the log: another connection reads every token.
    assert.equal(
      inspect(path, (db) => (db.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n),
      2_000,
    );
  });

  it('while the thread checkpoints, writes wait and reads are answered at once', async () => {
    const path = newFile();
    await openSqliteStore(path).close();
    const db = openDatabase(path);
    const warnings: string[] = [];
    const checkpointer = startCheckpointer(db, path, { onWarning: (message) => warnings.push(message), pages: 1 });
    const sql = checkpointer.wrap(sqliteRunner(db, path));
    try {
      db.exec('CREATE TABLE notes (n INTEGER)');
      // The first write leaves a frame in the log: a checkpoint starts on the thread.
      assert.equal(sql.run('INSERT INTO notes (n) VALUES (:n)', { n: 1 }), 1);
      const read = sql.get<{ n: number }>('SELECT count(*) AS n FROM notes');
      assert.ok(!(read instanceof Promise), 'a read is answered synchronously, as without the thread');
      assert.equal(read?.n, 1);
      const write = sql.run('INSERT INTO notes (n) VALUES (:n)', { n: 2 });
      assert.ok(write instanceof Promise, 'a write waits for the checkpoint');
      assert.equal(await write, 1);
      assert.equal(checkpointer.checkpoints >= 1, true);
      assert.deepEqual(warnings, []);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it('a checkpoint thread that fails says so once, and the writes go on (the commits checkpoint themselves)', async () => {
    const path = newFile();
    await openSqliteStore(path).close();
    const db = openDatabase(path);
    const warnings: string[] = [];
    // The thread cannot open its file: it fails as it starts.
    const checkpointer = startCheckpointer(db, join(dir, 'no such folder', 'tessera.db'), {
      onWarning: (message) => warnings.push(message),
      pages: 1,
    });
    const sql = checkpointer.wrap(sqliteRunner(db, path));
    try {
      db.exec('CREATE TABLE notes (n INTEGER)');
      const deadline = Date.now() + 10_000;
      while (warnings.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      for (let n = 0; n < 100; n++) assert.equal(await sql.run('INSERT INTO notes (n) VALUES (:n)', { n }), 1);
      assert.equal(warnings.length, 1);
      assert.match(
        warnings[0]!,
        /The SQLite checkpoint thread (failed|stopped); the commits checkpoint themselves once the log reaches 256 MiB/,
      );
      assert.equal(checkpointer.checkpoints, 0);
      assert.equal((db.prepare('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint, 65_536);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it('puts the file in WAL mode', async () => {
    const path = newFile();
    await openSqliteStore(path).close();
    const mode = inspect(path, (db) => db.prepare('PRAGMA journal_mode').get() as { journal_mode: string });
    assert.equal(mode.journal_mode, 'wal');
  });

  it('a transaction on a closed store is an error, like a statement, rather than an abort of the process', async () => {
    // libsql aborts (a Rust panic) on BEGIN, or on asking whether a transaction is open, once closed.
    const store = openSqliteStore(newFile());
    await store.close();
    const counts = [{ appId: 'a'.repeat(16), bucket: 0, type: 'token.issued' as const, principal: null, reason: null, count: 1 }];
    await assert.rejects(store.events.addCounts(counts, { writer: 'w', number: 1, at: 0 }), /database connection is not open/);
    await assert.rejects(async () => store.events.addCounts(counts), /database connection is not open/);
  });

  it('works with two stores open at once on the same new file', async () => {
    const path = newFile();
    const a = openSqliteStore(path);
    const b = openSqliteStore(path);
    try {
      const appA = makeApp();
      const appB = makeApp();
      await a.apps.insert(appA);
      await b.apps.insert(appB);
      assert.deepEqual(await b.apps.findById(appA.appId), appA);
      assert.deepEqual(await a.apps.findById(appB.appId), appB);
      const token = makeToken(appB.appId);
      await a.tokens.insert(token, 0);
      assert.deepEqual(await b.tokens.findBySelector(token.selector), token);
      await assert.rejects(b.apps.insert(makeApp({ clientId: appA.clientId })), { name: 'StoreConflictError' });
      assert.equal(await a.apps.count(), 2);
    } finally {
      await a.close();
      await b.close();
    }
    assert.deepEqual(
      appliedMigrations(path),
      SQLITE_MIGRATIONS.map((migration) => migration.version),
    );
  });

  it('migrates a new file once when several processes open it at the same moment', async () => {
    const path = newFile();
    const moduleUrl = new URL('../../src/store/sqlite/store.js', import.meta.url).href;
    // Each child waits for the same instant, opens the store (creating and migrating the file) and
    // inserts one app.
    const child = `
      const [moduleUrl, path, startAt, appJson] = process.argv.slice(1);
      const { openSqliteStore } = await import(moduleUrl);
      while (Date.now() < Number(startAt)) {}
      const app = JSON.parse(appJson);
      app.clientSecretHash = Buffer.from(app.clientSecretHash, 'hex');
      const store = openSqliteStore(path);
      await store.apps.insert(app);
      await store.close();
    `;
    const apps = Array.from({ length: 6 }, () => makeApp());
    const startAt = Date.now() + 1500;
    const run = promisify(execFile);
    const results = await Promise.allSettled(
      apps.map((app) =>
        run(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            child,
            moduleUrl,
            path,
            String(startAt),
            JSON.stringify({ ...app, clientSecretHash: app.clientSecretHash.toString('hex') }),
          ],
          { timeout: 20_000 },
        ),
      ),
    );
    const failures = results.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []));
    assert.deepEqual(failures, []);

    const store = openSqliteStore(path);
    try {
      const listed = await store.apps.list();
      assert.deepEqual(listed.map((app) => app.appId).sort(), apps.map((app) => app.appId).sort());
      for (const app of apps) assert.deepEqual(await store.apps.findById(app.appId), app);
    } finally {
      await store.close();
    }
    assert.deepEqual(
      appliedMigrations(path),
      SQLITE_MIGRATIONS.map((migration) => migration.version),
    );
  });

  it('opens sqlite::memory: through openStore, as a working store', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      assert.equal(store.backend, 'sqlite');
      const app = makeApp();
      await store.apps.insert(app);
      assert.deepEqual(await store.apps.findById(app.appId), app);
    } finally {
      await store.close();
    }
  });

  it('migration 4 keeps every event written before it, and trims refusals apart from the rest', async () => {
    const path = newFile();
    mkdirSync(dirname(path), { recursive: true });
    const appId = 'legacy-events-app';
    inspect(path, (db) => {
      db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT');
      for (const migration of SQLITE_MIGRATIONS.filter(({ version }) => version <= 2)) {
        db.exec(migration.sql);
        db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (:version, 0)').run({ version: migration.version });
      }
      const insert = db.prepare(
        'INSERT INTO events (app_id, type, at, principal, client_address, details) VALUES (:appId, :type, :at, :principal, :clientAddress, :details)',
      );
      for (const event of eventsBeforeMigration4(appId)) insert.run({ ...event, details: JSON.stringify(event.details) });
    });
    const store = openSqliteStore(path);
    try {
      await assertMigratedEvents(store, appId);
    } finally {
      await store.close();
    }
    assert.deepEqual(
      appliedMigrations(path),
      SQLITE_MIGRATIONS.map((migration) => migration.version),
    );
  });
});
