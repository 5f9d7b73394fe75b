import { isServiceUnavailable } from '../../error-catalogue.js';
import { TesseraError } from '../../errors.js';
import { createFirstKey } from '../sql/signing-keys.js';
import { sqlStore } from '../sql/store.js';
import type { Store } from '../store.js';
import { ChangeListener } from './change-listener.js';
import type pg from 'pg';
import { heedConnectionErrors, openPool, type PostgresConnector, type PostgresStoreOptions, type Warn } from './connection.js';
import { storeError } from '../sql/errors.js';
import { reasonOf } from './errors.js';
import { migrate, POSTGRES_MIGRATIONS, readSchemaState } from './migrations.js';
import { postgresRunner } from './runner.js';
import { readUpgradeState } from '../sql/upgrade.js';
import { missingGrants } from './grants.js';
import type { UpgradeState } from '../../upgrade/store.js';
import { currentBuild, SchemaRefused } from '../../release.js';
import type { OpenCheckingStore } from '../checking.js';
import { checkingReads } from '../sql/checking-reads.js';
import { readingRefusal } from '../schema.js';
import type { SqlRunner } from '../sql/runner.js';

export type { PostgresStoreOptions } from './connection.js';

/**
 * How long the change listener may stay deaf at start-up, its heartbeats sent through a pool that
 * answers, before the URL is taken to go through a transaction pooler: several heartbeats, each on
 * a new LISTEN connection, so that a slow machine is not mistaken for a pooler.
 */
const DEAF_AT_START_MS = 5_000;

const POOLER_ADVICE =
  'Through a transaction pooler (PgBouncer with pool_mode = transaction), set DATABASE_DIRECT_URL to PostgreSQL itself, ' +
  'beside DATABASE_URL (docs/deployment.md, "Connection poolers").';

/**
 * PostgreSQL, for several instances on one database. Every change that other instances must honour
 * (an app updated or deleted, tokens changed or removed) fires a trigger that NOTIFYs
 * `tessera_changes`; every instance LISTENs on a dedicated connection and empties its caches. If that
 * connection is lost, caches are emptied every 250 ms until it is back, so no instance serves a
 * stale grant for longer than that. With `directUrl`, the pool may go through a transaction pooler
 * (PgBouncer's pool_mode = transaction), and the LISTEN connection and migrations go straight to
 * PostgreSQL. When the database cannot be reached, operations fail with
 * `503 SERVICE_UNAVAILABLE` and `Retry-After`, and the pool reconnects by itself.
 *
 * Opening fails with `SERVICE_UNAVAILABLE` while the database cannot be reached, after trying again
 * for `startupRetryMs`; and with a plain error, at once, when `url` goes through a transaction
 * pooler without `directUrl` (its LISTEN hears nothing, named statements fail). Either way, nothing
 * it opened is left open.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  let upgradeState: UpgradeState | undefined;
  const opened = await openPostgres(url, options, async ({ pool, direct, pooled, sql, warn }) => {
    await migrateDirectly(pool, direct, pooled, warn);
    if (options.checkGrants === true) {
      const missing = await missingGrants(sql);
      if (missing !== undefined) throw missing;
    }
    await createFirstKey(sql, Date.now());
    upgradeState = await readUpgradeState(sql);
  });
  return sqlStore({
    backend: 'postgres',
    sql: opened.sql,
    upgradeState,
    // Half the pool, the other half for everything else.
    tokenBatchesInFlight: Math.max(1, Math.floor((options.poolSize ?? 10) / 2)),
    onChange: (change) => opened.changes.listeners.push(change),
    changeSignal: () => opened.changes.signal,
    close: opened.close,
  });
}

/**
 * What another service's `TesseraVerifier` reads (`CheckingStore`), over the same pool, pooler
 * checks and LISTEN connection as the server's store, on a schema Tessera made: it never migrates
 * nor writes, so a role that may only read opens it.
 */
export async function openPostgresCheckingStore(url: string, options: PostgresStoreOptions = {}): Promise<OpenCheckingStore> {
  const opened = await openPostgres(url, options, async ({ pool }) => {
    const state = await readSchemaState(pool);
    const refusal = readingRefusal(
      POSTGRES_MIGRATIONS.map((migration) => migration.version),
      state,
      currentBuild(),
      'this DATABASE_URL',
    );
    if (refusal !== undefined) throw new SchemaRefused(refusal);
  });
  return { ...checkingReads(opened.sql), onChange: (change) => opened.changes.listeners.push(change), close: opened.close };
}

interface Connections {
  pool: pg.Pool;
  direct: PostgresConnector;
  pooled: boolean;
  sql: SqlRunner;
  warn: Warn;
}

interface OpenedPostgres {
  sql: SqlRunner;
  changes: ChangeListener;
  /** Stops the LISTEN connection and ends the pool. */
  close: () => Promise<void>;
}

/**
 * The pool, its runner and the LISTEN connection, `prepare` run between the first two and the
 * third (migrations, or the schema check of a process that only reads). While the database cannot
 * be reached, tried again for `startupRetryMs`.
 */
async function openPostgres(
  url: string,
  options: PostgresStoreOptions,
  prepare: (connections: Connections) => Promise<void>,
): Promise<OpenedPostgres> {
  const warn = options.onWarning ?? (() => {});
  const retryMs = options.startupRetryMs ?? 0;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await openOnce(url, options, warn, prepare);
    } catch (error) {
      if (!isServiceUnavailable(error)) throw error;
      const left = started + retryMs - Date.now();
      if (left <= 0) {
        const tried = retryMs > 0 ? `, tried for ${Math.round((Date.now() - started) / 1000)} s` : '';
        throw new TesseraError('SERVICE_UNAVAILABLE', `The database cannot be reached (${reasonOf(error)}${tried}).`);
      }
      const delayMs = Math.min(250 * 2 ** (attempt - 1), 2_000, left);
      warn(`the database cannot be reached at start-up; trying again in ${delayMs} ms`, { message: reasonOf(error) });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

async function openOnce(
  url: string,
  options: PostgresStoreOptions,
  warn: Warn,
  prepare: (connections: Connections) => Promise<void>,
): Promise<OpenedPostgres> {
  const { pool, direct, pooled } = openPool(url, options, warn);
  let namedStatementsFailed: { code: string; message: string } | undefined;
  const sql = postgresRunner(pool, {
    pooled,
    onNamedStatementsFailed: (error) => {
      namedStatementsFailed = error;
      warn(
        `a named prepared statement failed as only through a transaction pooler (${error.message}): answered 503, and statements are sent unnamed from now on. ${POOLER_ADVICE}`,
        error,
      );
    },
  });
  let changes: ChangeListener | undefined;
  try {
    await prepare({ pool, direct, pooled, sql, warn });
    changes = new ChangeListener(
      () => direct.newClient(),
      warn,
      (payload) => Promise.resolve(sql.get("SELECT pg_notify('tessera_changes', :payload)", { payload })),
      { staleLimitMs: options.staleLimitMs },
    );
    if (!(await changes.start())) await refuseDeafListener(changes, sql, pooled);
    if (namedStatementsFailed !== undefined)
      throw new Error(poolerMessage(`named prepared statements fail (${namedStatementsFailed.message})`));
  } catch (error) {
    await changes?.stop();
    await pool.end().catch(() => {});
    throw startupError(error, namedStatementsFailed);
  }
  const listener = changes;
  return {
    sql,
    changes: listener,
    close: async () => {
      await listener.stop();
      await pool.end();
    },
  };
}

/**
 * A LISTEN connection that hears none of the heartbeats sent through a pool that answers: the URL
 * goes through a transaction pooler, which gives the LISTEN to a server connection that the next
 * client gets; or, with a direct URL, the two do not reach the same database. Given a few seconds
 * (several heartbeats, several connections) before concluding so.
 */
async function refuseDeafListener(changes: ChangeListener, sql: SqlRunner, pooled: boolean): Promise<void> {
  const deadline = Date.now() + DEAF_AT_START_MS;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (changes.hearing) return;
  }
  // A pool that does not answer either: the database is away, not behind a pooler (503, tried
  // again at start-up). A LISTEN connection that could not be opened (too many connections, the
  // direct URL away) is not a pooler either: it serves, caches emptied every 250 ms, until it is.
  await sql.get('SELECT 1 AS answered');
  if (changes.hearing || !changes.listened) return;
  const deaf =
    `its LISTEN connection heard none of the notifications sent through DATABASE_URL for ${DEAF_AT_START_MS / 1000} s, ` +
    'so revocations and rotated secrets would not reach this instance';
  if (!pooled) throw new Error(poolerMessage(deaf));
  throw new Error(
    `Tessera does not start: ${deaf}. DATABASE_DIRECT_URL must reach the same database as DATABASE_URL, ` +
      'straight to PostgreSQL (its primary), not through a pooler (docs/deployment.md, "Connection poolers").',
  );
}

function poolerMessage(symptom: string): string {
  return `Tessera does not start: DATABASE_URL seems to go through a transaction pooler: ${symptom}. ${POOLER_ADVICE}`;
}

/**
 * What opening failed with, said for an operator: `SERVICE_UNAVAILABLE` (tried again) when the
 * database cannot be reached, the pooler's advice when the pooler refused or broke what Tessera
 * needs, and any other error as it is.
 */
function startupError(error: unknown, namedStatementsFailed: { message: string } | undefined): unknown {
  const message = error instanceof Error ? error.message : '';
  // PgBouncer refuses a startup parameter it does not know, as the pool sends statement_timeout.
  if (/unsupported startup parameter/i.test(message))
    return new Error(poolerMessage(`it refused the connection: ${message}`), { cause: error });
  if (namedStatementsFailed !== undefined && isServiceUnavailable(error)) {
    return new Error(poolerMessage(`named prepared statements fail (${namedStatementsFailed.message})`), { cause: error });
  }
  return storeError(error, 'postgres');
}

/**
 * With a direct URL, migrations go straight to PostgreSQL as the LISTEN connection does (their lock
 * is transaction-level, so a transaction pooler would carry them too: `store copy` relies on it).
 */
async function migrateDirectly(pool: pg.Pool, direct: PostgresConnector, pooled: boolean, warn: Warn): Promise<void> {
  const options = { onWaiting: (message: string) => warn(message), onNotice: (message: string) => warn(message) };
  if (!pooled) {
    await migrate(pool, options);
    return;
  }
  const directPool = direct.newPool(1);
  heedConnectionErrors(directPool, warn);
  try {
    await migrate(directPool, options);
  } finally {
    await directPool.end();
  }
}
