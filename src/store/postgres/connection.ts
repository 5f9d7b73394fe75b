import pg from 'pg';

export interface PostgresStoreOptions {
  /** Connections in the pool (PG_POOL_SIZE). */
  poolSize?: number;
  /** How long to wait for a connection before answering 503 (PG_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** How long a statement may run before answering 503 (PG_QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /**
   * A connection straight to PostgreSQL (DATABASE_DIRECT_URL), for what a transaction pooler cannot
   * carry: the LISTEN connection and the migrations (with their advisory lock). When it is set, the
   * store's URL is taken to go through such a pooler, and statements there are sent unnamed.
   */
  directUrl?: string;
  /**
   * The longest what is cached is served after the last proof that every change made elsewhere is
   * heard (PG_STALE_LIMIT_MS): how long an outage is ridden through, and how long an acknowledged
   * revocation may go unenforced on an instance that cannot hear it.
   */
  staleLimitMs?: number;
  /** Told about trouble the service survives (a lost notification connection, an idle client's error). */
  onWarning?: Warn;
}

export type Warn = (message: string, error?: unknown) => void;

/**
 * The pool, and how to open a connection of one's own straight to PostgreSQL (the LISTEN connection,
 * the migrations'): through `directUrl` when there is one, else like the pool's.
 */
export interface PostgresConnection {
  pool: pg.Pool;
  clientConfig: pg.ClientConfig;
  /** Whether the pool's connections go through a transaction pooler (a `directUrl` was given). */
  pooled: boolean;
}

export function openPool(url: string, options: PostgresStoreOptions, warn: Warn): PostgresConnection {
  const queryTimeoutMs = options.queryTimeoutMs ?? 5_000;
  const poolConfig = { connectionString: url, application_name: 'tessera', connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000 };
  const pool = new pg.Pool({
    ...poolConfig,
    max: options.poolSize ?? 10,
    idleTimeoutMillis: 30_000,
    query_timeout: queryTimeoutMs,
    // A startup parameter PgBouncer refuses ("unsupported startup parameter"); through a pooler the
    // wait is bounded by query_timeout alone (docs/deployment.md, "Connection poolers").
    ...(options.directUrl === undefined ? { statement_timeout: queryTimeoutMs } : {}),
  });
  heedConnectionErrors(pool, warn);
  const clientConfig = options.directUrl === undefined ? poolConfig : { ...poolConfig, connectionString: options.directUrl };
  return { pool, clientConfig, pooled: options.directUrl !== undefined };
}

/**
 * Hears the error of every connection of the pool for the whole of its life: idle in the pool,
 * checked out, inside a transaction. pg emits 'error' on a connection that breaks (terminated by
 * `pg_terminate_backend()` in a switchover, a database restart, a cut network), and the pool
 * listens only while the connection is idle: an error unheard ends the process. The statement in
 * progress, or the next one, fails too, which answers 503; the pool replaces the connection.
 */
export function heedConnectionErrors(pool: pg.Pool, warn: Warn): void {
  pool.on('connect', (client) => {
    // A terminated connection emits twice: PostgreSQL's message, then the closed socket.
    let told = false;
    client.on('error', (error) => {
      if (told) return;
      told = true;
      warn('a database connection failed; the pool opens another when needed', describeError(error));
    });
  });
  // The pool passes on an idle connection's error, which its own listener above has told.
  pool.on('error', () => {});
}

/** What to log of a connection's error: never the client pg attaches to it (its settings, its socket). */
export function describeError(error: Error & { code?: string }): { code: string | undefined; message: string } {
  return { code: error.code, message: error.message };
}
