/**
 * `npm run bench:copy -- [--tokens N] [--batch-size B]`: how long `tessera store copy` takes to move a
 * store of N tokens (default 10⁶) from SQLite to PostgreSQL and back. The SQLite store is made
 * directly in SQL, rows shaped as the store writes them (one app, admin tokens with random selectors
 * and verifier digests); each copy is the real CLI as a child process, timed from spawn to exit, its
 * peak memory read by /usr/bin/time when it is there. PostgreSQL: TEST_POSTGRES_URL's server, a new
 * database dropped at the end.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'libsql';
import pg from 'pg';
import { openSqliteStore } from '../src/store/sqlite/store.js';

const argv = process.argv.slice(2);
const option = (flag: string, fallback: string) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};
const tokens = Number(option('--tokens', '1000000'));
const batchSize = option('--batch-size', '5000');
const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
// This file compiles to <root>/dist/bench/store-copy.js.
const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const TIME = '/usr/bin/time';

const dir = mkdtempSync(join(tmpdir(), 'tessera-bench-copy-'));
const source = join(dir, 'source.db');
const back = join(dir, 'back.db');
const database = `tessera_bench_copy_${process.pid}`;
const pgUrl = Object.assign(new URL(adminUrl), { pathname: `/${database}` }).toString();

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** One app and `count` admin tokens, as the store writes them, in one transaction. */
async function fillSqlite(count: number): Promise<number> {
  const started = performance.now();
  const store = openSqliteStore(source);
  await store.close();
  const db = new Database(source);
  const appId = randomBytes(8).toString('hex');
  const at = Date.now();
  db.prepare(
    `INSERT INTO apps (app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration)
     VALUES (:appId, 'Bench', :appKey, :clientId, :hash, :adminId, :at, :configuration)`,
  ).run({
    appId,
    appKey: randomBytes(16).toString('hex'),
    clientId: randomBytes(16).toString('hex'),
    hash: randomBytes(32),
    adminId: randomUUID(),
    at,
    configuration: '{}',
  });
  const insert = db.prepare(
    `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at) VALUES (:selector, :verifierHash, :appId, 'admin', :at, :expiresAt)`,
  );
  const chunk = 10_000;
  for (let done = 0; done < count; done += chunk) {
    const rows = Math.min(chunk, count - done);
    const random = randomBytes(rows * 48);
    db.transaction(() => {
      for (let row = 0; row < rows; row++) {
        const offset = row * 48;
        insert.run({
          selector: random.subarray(offset, offset + 16),
          verifierHash: random.subarray(offset + 16, offset + 48),
          appId,
          at: at + row,
          expiresAt: at + 86_400_000,
        });
      }
    })();
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return performance.now() - started;
}

interface Timed {
  seconds: number;
  rows: number;
  rowsPerSecond: number;
  peakMemoryMB: number | null;
}

/** `tessera store copy --from FROM --to TO --json`, timed. */
async function timedCopy(from: string, to: string): Promise<Timed> {
  const memoryFile = join(dir, 'memory.txt');
  const viaTime = existsSync(TIME);
  const args = ['store', 'copy', '--from', from, '--to', to, '--batch-size', batchSize, '--json'];
  const started = performance.now();
  const child = viaTime
    ? spawn(TIME, ['-f', '%M', '-o', memoryFile, process.execPath, MAIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`store copy exited ${code}`);
  const result = JSON.parse(stdout) as { rows: number };
  const peakMemoryMB = viaTime ? Math.round(Number(readFileSync(memoryFile, 'utf8').trim().split('\n').at(-1)) / 1024) : null;
  return { seconds: round(seconds), rows: result.rows, rowsPerSecond: Math.round(result.rows / seconds), peakMemoryMB };
}

const round = (value: number) => Math.round(value * 10) / 10;

try {
  console.error(`making a SQLite store of ${tokens.toLocaleString('en-US')} tokens…`);
  const fillMs = await fillSqlite(tokens);
  console.error(`made in ${round(fillMs / 1000)} s (${Math.round(statSync(source).size / 1_048_576)} MB); copying to PostgreSQL…`);
  await admin(`CREATE DATABASE ${database}`);
  const toPostgres = await timedCopy(source, pgUrl);
  console.error(`SQLite → PostgreSQL: ${toPostgres.seconds} s; copying back…`);
  const toSqlite = await timedCopy(pgUrl, back);
  const cpus = execFileSync('nproc').toString().trim();
  console.log(
    JSON.stringify(
      {
        tokens,
        batchSize: Number(batchSize),
        cpus: Number(cpus),
        sqliteMB: Math.round(statSync(source).size / 1_048_576),
        sqliteToPostgres: toPostgres,
        postgresToSqlite: toSqlite,
      },
      null,
      2,
    ),
  );
} finally {
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
