import type pg from 'pg';
import { isServiceUnavailable } from '../../error-catalogue.js';
import { TesseraError } from '../../errors.js';
import { storeError } from '../sql/errors.js';
import type { SqlRunner } from '../sql/runner.js';
import { ChangeListener } from './change-listener.js';
import { openPool, type PostgresConnector, type PostgresStoreOptions, type Warn } from './connection.js';
import { reasonOf } from './errors.js';
import { postgresRunner } from './runner.js';

/**
 * How long the change listener may stay deaf at start-up, its heartbeats sent through a pool that
 * answers, before the URL is taken to go through a transaction pooler: several heartbeats, each on
 * a new LISTEN connection, so that a slow machine is not mistaken for a pooler.
 */
const DEAF_AT_START_MS = 5_000;

const POOLER_ADVICE =
  'Through a transaction pooler (PgBouncer with pool_mode = transaction), set DATABASE_DIRECT_URL to PostgreSQL itself, ' +
  'beside DATABASE_URL (docs/deployment.md, "Connection poolers").';

export interface Connections {
  pool: pg.Pool;
  direct: PostgresConnector;
  pooled: boolean;
  sql: SqlRunner;
  warn: Warn;
}

export interface OpenedPostgres {
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
export async function openPostgres(
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
