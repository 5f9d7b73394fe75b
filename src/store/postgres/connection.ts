import pg from 'pg';
import { unavailableOr } from './errors.js';

export interface PostgresStoreOptions {
  /** Connections in the pool (PG_POOL_SIZE). */
  poolSize?: number;
  /** How long to wait for a connection before answering 503 (PG_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** How long a statement may run before answering 503 (PG_QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /** Told about trouble the service survives (a lost notification connection, an idle client's error). */
  onWarning?: Warn;
}

export type Warn = (message: string, error?: unknown) => void;

/** The pool, and how to open a connection of one's own (the LISTEN connection). */
export interface PostgresConnection {
  pool: pg.Pool;
  clientConfig: pg.ClientConfig;
}

export function openPool(url: string, options: PostgresStoreOptions, warn: Warn): PostgresConnection {
  const queryTimeoutMs = options.queryTimeoutMs ?? 5_000;
  const clientConfig = { connectionString: url, application_name: 'tessera', connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000 };
  const pool = new pg.Pool({
    ...clientConfig,
    max: options.poolSize ?? 10,
    idleTimeoutMillis: 30_000,
    query_timeout: queryTimeoutMs,
    statement_timeout: queryTimeoutMs,
  });
  // An idle connection that breaks (a database restart) must not crash the process.
  pool.on('error', (error) => warn('an idle database connection failed', error));
  return { pool, clientConfig };
}

/**
 * What each table's persister is given: one statement on any connection of the pool, or several on
 * one connection in a transaction. Both fail with `503 SERVICE_UNAVAILABLE` when the database
 * cannot be reached (see `errors.ts`).
 */
export interface PostgresQueries {
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

export function poolQueries(pool: pg.Pool): PostgresQueries {
  return {
    async query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
      try {
        return await pool.query<R>(config);
      } catch (error) {
        throw unavailableOr(error);
      }
    },
    async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw unavailableOr(error);
      }
      try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw unavailableOr(error);
      } finally {
        client.release();
      }
    },
  };
}
