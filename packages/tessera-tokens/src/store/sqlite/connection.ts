import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'libsql';
import { isBusy } from './errors.js';

// Every statement binds named parameters (`:name` with an object). libsql takes a lone Buffer
// argument for a named-parameter object and aborts the process, so positional binding is avoided.
// Its `pluck()` applies to `all()` only, so single values are read by column name.

export type SqliteDatabase = Database.Database;

/**
 * Opens one SQLite file in WAL mode, creating it readable by its owner only. `synchronous=NORMAL`
 * makes every commit durable against a crash of the process (the WAL is written before a call
 * returns); an operating-system crash or power loss may lose the last commits, which
 * `docs/architecture.md` discusses.
 */
export function openDatabase(path: string): SqliteDatabase {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // A new file is readable by its owner only; SQLite gives the -wal and -shm files the same mode.
    closeSync(openSync(path, 'a', 0o600));
  }
  const db = new Database(path);
  db.exec('PRAGMA busy_timeout = 5000');
  // Switching a new file to WAL and recovering a WAL can report SQLITE_BUSY without waiting for
  // the busy timeout, when several processes (a server, the CLI) open the file at the same moment.
  retryWhileBusy(() => db.exec('PRAGMA journal_mode = WAL'));
  db.exec('PRAGMA synchronous = NORMAL');
  // Checkpoint when the WAL reaches 64 MiB (16,384 pages), not SQLite's 4 MiB. Each commit writes
  // every page it changed whole; tokens and events issued for many apps change a different leaf of
  // the per-app indexes each, and a checkpoint copies each page once however often the WAL holds it.
  // Measured with 10⁴ apps: 34 µs of CPU a token at 4 MiB, 25 at 64 MiB (docs/benchmarks.md). The
  // file is cut back to that size after a checkpoint that let it grow further (a long read).
  db.exec('PRAGMA wal_autocheckpoint = 16384');
  db.exec(`PRAGMA journal_size_limit = ${64 * 1024 * 1024}`);
  // Per connection; SQLite's default is off (libsql's is on): deleting an app or a developer deletes
  // its memberships, links and sessions through ON DELETE CASCADE (migration 6).
  db.exec('PRAGMA foreign_keys = ON');
  return db;
}

/**
 * Opens a SQLite file that exists (the caller checked), to read it as it is: nothing is set that
 * would write to it (a Tessera store is in WAL mode already, which the file itself records).
 */
export function openDatabaseToRead(path: string): SqliteDatabase {
  const db = new Database(path);
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

/** Retries `step` while another process holds the file's lock, for up to `timeoutMs`. */
export function retryWhileBusy<T>(step: () => T, timeoutMs = 10_000): T {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return step();
    } catch (error) {
      if (!isBusy(error) || Date.now() > deadline) throw error;
      // Opening only: a short synchronous pause before the next try.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.random() * 40);
    }
  }
}
