import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import { statementText, type SqlParams, type SqlRunner, type Statement } from 'tessera-tokens/internal/store/sql/runner.js';
import type { SqliteDatabase } from 'tessera-tokens/internal/store/sqlite/connection.js';
import type { CheckpointAnswer, CheckpointRequest, CheckpointWorkerData } from './checkpoint-worker.js';

/**
 * The log's size that starts a checkpoint (16,384 pages, 64 MiB): the mark the serving connection's
 * own automatic checkpoint had (`connection.ts` says why so high).
 */
export const CHECKPOINT_PAGES = 16_384;
/**
 * The serving connection's own automatic checkpoint, kept as a backstop: it runs inside a commit, on
 * the event loop, only if the log reaches 256 MiB, which it does only if the thread has failed.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 65_536;
/** Writes wait this long at most for a checkpoint; then they go on, and the thread is said to be late. */
export const CHECKPOINT_WAIT_MS = 5_000;

export interface CheckpointerOptions {
  /** Told once if a checkpoint fails, is late, or the thread stops (the backstop then takes over). */
  onWarning: (message: string, error?: unknown) => void;
  /** Tests lower it (`CHECKPOINT_PAGES`). */
  pages?: number;
}

export interface Checkpointer {
  /** `runner`, its writes followed by a look at the log's size, and held while a checkpoint runs. */
  wrap(runner: SqlRunner): SqlRunner;
  /** How many checkpoints the thread has run. */
  readonly checkpoints: number;
  /** Stops the thread (after the checkpoint under way, if any). */
  stop(): Promise<void>;
}

/**
 * Checkpoints off the event loop (docs/benchmarks.md, "The tail"). SQLite's automatic checkpoint
 * runs inside the commit that crosses its mark: tens of milliseconds in which the process answers
 * nothing, not even a token check from memory. Here, once a write leaves the log at
 * `CHECKPOINT_PAGES` or more, the process's writes wait while a worker thread, on a connection of its
 * own, copies the log into the database; the event loop goes on serving everything that does not
 * write. With no write beside it, the checkpoint copies the whole log and the next commit starts the
 * log over: the work and the log's size are those of the automatic checkpoint, without its block.
 * Durability does not change: a commit is in the log before it is answered, and a checkpoint only
 * copies it (a kill -9 in the middle of one loses nothing).
 */
export function startCheckpointer(db: SqliteDatabase, path: string, options: CheckpointerOptions): Checkpointer {
  db.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
  const pages = options.pages ?? CHECKPOINT_PAGES;
  const worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { path } satisfies CheckpointWorkerData });
  worker.unref();
  const logIndex = new LogIndex(path);
  let running = true;
  let stopping = false;
  let checkpoints = 0;
  let warned = false;
  const warnOnce = (message: string, error?: unknown) => {
    if (warned) return;
    warned = true;
    options.onWarning(`${message}; the commits checkpoint themselves once the log reaches 256 MiB`, error);
  };
  let answered: ((answer: CheckpointAnswer) => void) | undefined;
  worker.on('message', (answer: CheckpointAnswer) => answered?.(answer));
  worker.on('error', (error) => warnOnce('The SQLite checkpoint thread failed', error));
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      running = false;
      answered?.({ failed: 'the thread stopped' });
      if (!stopping) warnOnce('The SQLite checkpoint thread stopped');
      resolve();
    }),
  );

  /** Set while a checkpoint runs: the writes wait for it. */
  let underway: Promise<void> | undefined;

  const checkpoint = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        answered = undefined;
        warnOnce(`An SQLite checkpoint took over ${CHECKPOINT_WAIT_MS} ms`);
        resolve();
      }, CHECKPOINT_WAIT_MS);
      answered = (answer) => {
        clearTimeout(timer);
        answered = undefined;
        if ('failed' in answer) warnOnce(`An SQLite checkpoint failed (${answer.failed})`);
        else checkpoints++;
        resolve();
      };
      worker.postMessage('checkpoint' satisfies CheckpointRequest);
    });

  const afterWrite = () => {
    if (underway !== undefined || !running || stopping || logIndex.frames() < pages) return;
    underway = checkpoint().finally(() => (underway = undefined));
  };
  const written = <T>(result: MaybePromise<T>): MaybePromise<T> => {
    if (result instanceof Promise) return result.then((value) => (afterWrite(), value));
    afterWrite();
    return result;
  };

  /** A write waits while a checkpoint runs, and is followed by a look at the log's size; a read is neither. */
  const write = <T>(step: () => MaybePromise<T>): MaybePromise<T> =>
    underway === undefined ? written(step()) : underway.then(() => written(step()));

  return {
    wrap: (runner) => ({
      dialect: runner.dialect,
      all: <Row>(statement: Statement, params?: SqlParams) =>
        isWrite(statement) ? write(() => runner.all<Row>(statement, params)) : runner.all<Row>(statement, params),
      get: <Row>(statement: Statement, params?: SqlParams) =>
        isWrite(statement) ? write(() => runner.get<Row>(statement, params)) : runner.get<Row>(statement, params),
      run: (statement: Statement, params?: SqlParams) =>
        isWrite(statement) ? write(() => runner.run(statement, params)) : runner.run(statement, params),
      async transaction(work) {
        while (underway !== undefined) await underway;
        return written(await runner.transaction(work));
      },
    }),
    get checkpoints() {
      return checkpoints;
    },
    async stop() {
      stopping = true;
      await underway;
      // Unreferenced, the thread would not keep the process alive until it has stopped.
      worker.ref();
      if (running) worker.postMessage('stop' satisfies CheckpointRequest);
      await exited;
      logIndex.close();
    },
  };
}

const writes = new Map<string, boolean>();

/** Whether a statement writes: an INSERT, UPDATE or DELETE (with RETURNING, read with `all` or `get`). */
function isWrite(statement: Statement): boolean {
  const text = statementText(statement, 'sqlite');
  let found = writes.get(text);
  if (found === undefined) {
    found = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(text);
    writes.set(text, found);
  }
  return found;
}

/**
 * The write-ahead log's index (the -shm file), read for one number: `mxFrame`, the frames in the
 * log, at offset 16 of its header, a 32-bit integer in the machine's byte order
 * (https://sqlite.org/walformat.html), which every commit updates. A read costs a system call.
 */
class LogIndex {
  readonly #header = Buffer.alloc(20);
  #fd: number | undefined;

  constructor(private readonly path: string) {}

  frames(): number {
    try {
      this.#fd ??= openSync(`${this.path}-shm`, 'r');
      readSync(this.#fd, this.#header, 0, this.#header.length, 0);
    } catch {
      return 0;
    }
    return endianness() === 'LE' ? this.#header.readUInt32LE(16) : this.#header.readUInt32BE(16);
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
