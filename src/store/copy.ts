import { closeSync, mkdirSync, openSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { keyOf, TABLES, type Row, type StoreDump, type TableSpec, type Value } from './dump.js';
import { importBackend, parseDatabaseUrl, type StoreLocation } from 'tessera-tokens/internal/store/location.js';

/** Rows per batch: one read, one write transaction each. */
export const DEFAULT_BATCH_SIZE = 5_000;

export interface CopyProgress {
  table: string;
  /** Rows of this table copied so far, of `total`. */
  done: number;
  total: number;
  /** Since this table began. */
  elapsedMs: number;
}

export interface CopyOptions {
  batchSize?: number;
  /** Called when a table begins and after each batch. */
  onProgress?: (progress: CopyProgress) => void;
  /** Stops the copy between two batches (SIGINT). */
  signal?: AbortSignal;
  /** Told what the copy goes on despite (a SQLite source a server seems to be writing). */
  onWarning?: (message: string) => void;
}

export interface CopyResult {
  from: string;
  to: string;
  schemaVersion: number;
  tables: { name: string; rows: number }[];
  rows: number;
  elapsedMs: number;
  /** The rows compared one by one after the copy, per table. */
  compared: Record<string, number>;
}

/** The rows compared field by field once the copy is done (besides every table's count). */
const SAMPLES: readonly { table: string; limit: number; where?: string }[] = [
  { table: 'tokens', limit: 100, where: "kind = 'admin'" },
  { table: 'tokens', limit: 100 },
  { table: 'keys', limit: 65_535 },
  { table: 'apps', limit: 100 },
  { table: 'revoked_tokens', limit: 100 },
  { table: 'developers', limit: 100 },
  { table: 'developer_sessions', limit: 100 },
];

/**
 * `tessera store copy`: every table of the store at `fromUrl` into the empty store at `toUrl`, rows
 * as they are (ids, hashed secrets, keys: every token and key keeps working), and each counter past
 * the ids copied. Both are opened as the server opens them, so both are migrated; different schema
 * versions are refused, as is a target holding anything but the first key that opening a store
 * makes, and a SQLite file that another user could read. Verified at the end: counts per table, and
 * samples compared field by field. The tables are those of `TABLES` (`dump.ts`): not the writers of
 * event counts (`event_count_writers`), which guard a running process's retries into its own
 * database only (the comment there says why).
 */
export async function copyStore(fromUrl: string, toUrl: string, options: CopyOptions = {}): Promise<CopyResult> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const started = Date.now();
  const fromLocation = parseDatabaseUrl(fromUrl);
  const toLocation = parseDatabaseUrl(toUrl);
  if (sameStore(fromLocation, toLocation)) throw new TesseraError('CONFLICT', 'store copy: --from and --to name the same store');
  if (fromLocation.backend === 'sqlite' && sqliteInUse(fromLocation.path)) {
    options.onWarning?.(
      `${fromLocation.path} seems to be in use: its write-ahead log is not empty, so a server may be running on it (or did not stop cleanly). ` +
        'The copy is one consistent snapshot, but what is written after it begins is not copied: stop the server before copying.',
    );
  }
  const source = await openDump(fromLocation, 'source');
  let target: StoreDump | undefined;
  let verifying = false;
  try {
    if (toLocation.backend === 'sqlite') claimSqliteTarget(toLocation.path);
    target = await openDump(toLocation, 'target');
    const [sourceVersion, targetVersion] = [await source.schemaVersion(), await target.schemaVersion()];
    if (sourceVersion !== targetVersion) {
      throw new TesseraError(
        'CONFLICT',
        `store copy: the source is at schema version ${sourceVersion}, the target at ${targetVersion}; ` +
          'copy between stores of the same version (upgrade Tessera to the newer one, and start it once on each)',
      );
    }
    await refuseNonEmpty(target, toLocation);

    const totals = new Map<string, number>();
    for (const table of TABLES) totals.set(table.name, await source.count(table));
    try {
      for (const table of TABLES) await copyTable(source, target, table, totals.get(table.name)!, batchSize, options);
      for (const table of TABLES) {
        if (table.counter !== undefined) await target.setCounterPosition(table, await source.counterPosition(table));
      }
    } catch (error) {
      const reason = options.signal?.aborted === true ? 'interrupted' : (error as Error).message;
      throw new Error(
        `store copy failed (${reason}); the target holds part of the copy and will be refused as not empty. ${startOver(toLocation)}`,
        {
          cause: error,
        },
      );
    }

    verifying = true;
    const compared = await verify(source, target, totals, toLocation);
    const tables = TABLES.map((table) => ({ name: table.name, rows: totals.get(table.name)! }));
    return {
      from: source.description,
      to: target.description,
      schemaVersion: sourceVersion,
      tables,
      rows: tables.reduce((sum, table) => sum + table.rows, 0),
      elapsedMs: Date.now() - started,
      compared,
    };
  } catch (error) {
    // Lost before the copy began (nothing written) or while verifying it (all written, not checked).
    if (!isServiceUnavailable(error)) throw error;
    const cause = (error as Error).cause as { message?: string } | undefined;
    throw new TesseraError(
      'SERVICE_UNAVAILABLE',
      `store copy: a database could not be reached (${cause?.message ?? (error as Error).message}); ` +
        (verifying ? `the copy was written but not verified. ${startOver(toLocation)}` : 'nothing was copied: copy again once it is back.'),
    );
  } finally {
    await target?.close();
    await source.close();
  }
}

/** A store's tables, opened as a server opens the store (migrated), without making a first key. */
export async function openDump(location: StoreLocation, role: 'source' | 'target'): Promise<StoreDump> {
  if (location.backend === 'sqlite') {
    const { openSqliteDump } = await importBackend('libsql', () => import('./sqlite/dump.js'));
    return openSqliteDump(location.path, role);
  }
  const { openPostgresDump } = await importBackend('pg', () => import('./postgres/dump.js'));
  return openPostgresDump(location.url, role);
}

function sameStore(a: StoreLocation, b: StoreLocation): boolean {
  if (a.backend === 'sqlite' && b.backend === 'sqlite') return a.path === b.path || realPathOf(a.path) === realPathOf(b.path);
  return a.backend === 'postgres' && b.backend === 'postgres' && a.url === b.url;
}

/**
 * Whether a SQLite file's write-ahead log holds anything: a process has it open, or did not close it
 * cleanly. Closing the last connection checkpoints the log and removes it (the server and the CLI do).
 */
function sqliteInUse(path: string): boolean {
  try {
    return statSync(`${path}-wal`).size > 0;
  } catch {
    return false;
  }
}

/**
 * The SQLite file a copy writes, which will hold every signing key and password hash: created here,
 * exclusively and readable by its owner only, as `store backup` creates its file. An existing one (a
 * server started once on it makes one so) is used only if it is this user's and no one else may read
 * or write it, nor its `-wal` and `-shm` files. Changing the mode of one that was open to others would
 * not do: whoever opened it then may hold it open, and read what the copy writes into it.
 */
function claimSqliteTarget(path: string): void {
  if (path === ':memory:') return;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Windows has no owner and mode bits to check (process.getuid is POSIX only).
  const uid = process.getuid?.();
  if (uid === undefined) return;
  const advice = `Nothing was written. Give --to a path that does not exist (store copy creates the file readable by its owner only), or delete ${path} (and ${path}-wal, ${path}-shm if present) and copy again.`;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    let stats: Stats;
    try {
      stats = statSync(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    if (stats.uid !== uid) {
      throw new TesseraError(
        'CONFLICT',
        `store copy: the target ${file} belongs to another user (uid ${stats.uid}), who could read the signing keys and password hashes copied into it. ` +
          `${advice} To fill a file of another user, run store copy as that user.`,
      );
    }
    if ((stats.mode & 0o077) !== 0) {
      throw new TesseraError(
        'CONFLICT',
        `store copy: the target ${file} is open to other users (mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')}), who could read the signing keys and password hashes copied into it. ${advice}`,
      );
    }
  }
}

/** The file a path names, through links; the path itself if there is no such file yet. */
function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * The tables that a new store gets one row of by itself: the first key (a server started once on the
 * new database) and the next status list index. With no app, nothing can hold a token that key
 * signed nor an index; they are deleted, and the source's rows take their place.
 */
const MADE_WITH_THE_STORE = new Set(['keys', 'status_list_next']);

/** Anything in the target is refused, except the rows a new store makes by itself (`MADE_WITH_THE_STORE`). */
async function refuseNonEmpty(target: StoreDump, location: StoreLocation): Promise<void> {
  const found: string[] = [];
  const madeWithTheStore: TableSpec[] = [];
  for (const table of TABLES) {
    const rows = await target.count(table);
    if (rows === 0) continue;
    if (MADE_WITH_THE_STORE.has(table.name) && rows === 1) madeWithTheStore.push(table);
    else found.push(`${table.name} (${rows.toLocaleString('en-US')} ${rows === 1 ? 'row' : 'rows'})`);
  }
  if (found.length > 0) {
    const firstKey = madeWithTheStore.some((table) => table.name === 'keys');
    throw new TesseraError(
      'CONFLICT',
      `store copy: the target ${target.description} is not empty: it holds ${found.join(', ')}${firstKey ? ' and a key' : ''}. ` +
        `Nothing was written. store copy writes into an empty store only. ${startOver(location)}`,
    );
  }
  for (const table of madeWithTheStore) await target.clear(table);
}

function startOver(location: StoreLocation): string {
  return location.backend === 'sqlite'
    ? `To start over, delete ${location.path} (and ${location.path}-wal, ${location.path}-shm if present), then copy again.`
    : 'To start over, drop the target database and create it again empty (DROP DATABASE …; CREATE DATABASE … OWNER …), then copy again.';
}

async function copyTable(
  source: StoreDump,
  target: StoreDump,
  table: TableSpec,
  total: number,
  batchSize: number,
  options: CopyOptions,
): Promise<void> {
  const started = Date.now();
  const report = (done: number) => options.onProgress?.({ table: table.name, done, total, elapsedMs: Date.now() - started });
  report(0);
  let done = 0;
  let after: Value[] | undefined;
  for (;;) {
    // SQLite answers synchronously: let the event loop run between batches, or a signal (Ctrl-C) waits for the end.
    await new Promise((resolve) => setImmediate(resolve));
    if (options.signal?.aborted === true) throw new Error('interrupted');
    const rows = await source.read(table, after, batchSize);
    if (rows.length === 0) break;
    await target.write(table, rows);
    done += rows.length;
    after = keyOf(table, rows.at(-1)!);
    report(done);
    if (rows.length < batchSize) break;
  }
}

/** Counts per table, then the samples compared field by field; throws naming the first difference. */
async function verify(
  source: StoreDump,
  target: StoreDump,
  totals: Map<string, number>,
  location: StoreLocation,
): Promise<Record<string, number>> {
  const differences: string[] = [];
  for (const table of TABLES) {
    const [expected, copied] = [totals.get(table.name)!, await target.count(table)];
    if (expected !== copied) differences.push(`${table.name}: ${expected} rows in the source, ${copied} in the target`);
  }
  const compared: Record<string, number> = {};
  for (const sample of SAMPLES) {
    const table = TABLES.find((spec) => spec.name === sample.table)!;
    const keys = await source.sampleKeys(table, sample.limit, sample.where);
    if (keys.length === 0) continue;
    const byKey = async (dump: StoreDump) =>
      new Map((await dump.readKeys(table, keys)).map((row) => [canonicalRow(keyOf(table, row)), canonicalRow(row, table)]));
    const [expected, copied] = [await byKey(source), await byKey(target)];
    for (const [key, row] of expected) {
      if (copied.get(key) !== row) differences.push(`${table.name}: a row differs in the target (key ${key.slice(0, 40)})`);
    }
    compared[table.name] = (compared[table.name] ?? 0) + expected.size;
  }
  if (differences.length > 0) {
    throw new Error(`store copy: the target does not match the source: ${differences.slice(0, 5).join('; ')}. ${startOver(location)}`);
  }
  return compared;
}

/** A row as comparable text: blobs as hex, JSON with its keys sorted (PostgreSQL's jsonb orders them its own way). */
export function canonicalRow(row: Row, table?: TableSpec): string {
  return JSON.stringify(
    row.map((value, index) => {
      if (Buffer.isBuffer(value)) return `x${value.toString('hex')}`;
      if (table?.columns[index]?.kind === 'json' && typeof value === 'string') return sortedKeys(JSON.parse(value));
      return value;
    }),
  );
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => [key, sortedKeys(item)]),
  );
}
