import pg from 'pg';
import { isServiceUnavailable, serviceUnavailable } from '../../error-catalogue.js';
import { statementText, type SqlParams, type SqlRunner, type Statement } from '../sql/runner.js';
import { storeError } from '../sql/errors.js';
import { withCause } from './errors.js';

const INT8 = 20;
/**
 * `bigint` columns (instants in ms, ids, counts) read as numbers, as SQLite's integers are: every
 * value the service stores is below 2^53.
 */
const types = {
  getTypeParser: (oid: number, format?: 'text' | 'binary'): ParseValue =>
    oid === INT8 && format !== 'binary' ? Number : (pg.types.getTypeParser(oid, format) as ParseValue),
};

/** A column's parser (pg types it `any`): of the text PostgreSQL sends, or of bytes in format `binary`. */
type ParseValue = (value: string | Buffer) => unknown;

/** A statement's text with `$n` for its `:name` parameters, and the names in that order. */
interface Translated {
  config: { name: string | undefined; text: string };
  names: string[];
}

// `:name`, but not the `::type` of a cast.
const PARAMETER = /(?<![:\w]):([A-Za-z_]\w*)/g;
// Statements that are prepared once per connection and named (unless through a transaction pooler);
// utility statements (LOCK, SET) are not.
const PREPARABLE = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i;

/**
 * What a named statement gets through a transaction pooler without DATABASE_DIRECT_URL: prepared
 * on one server connection, then prepared again on the same one by another client (42P05
 * duplicate_prepared_statement), asked for on another (26000 invalid_sql_statement_name), or bound
 * on one where another client prepared a different statement under its name (08P01, "bind message
 * supplies 0 parameters, but prepared statement … requires 1").
 */
const NAMED_STATEMENT_FAILURES = new Set(['42P05', '26000']);
const brokenNamedStatement = (code: string | undefined, message: string) =>
  code !== undefined && (NAMED_STATEMENT_FAILURES.has(code) || (code === '08P01' && /prepared statement|bind message/i.test(message)));

export interface PostgresRunnerOptions {
  /** The pool goes through a transaction pooler (DATABASE_DIRECT_URL is set): statements are unnamed. */
  pooled?: boolean;
  /**
   * Told once when a named statement failed as only through a transaction pooler (42P05, 26000);
   * that statement is answered 503, and every statement is sent unnamed from then on.
   */
  onNamedStatementsFailed?: (error: { code: string; message: string }) => void;
}

/**
 * The runner over a pool: a statement on any connection, or a transaction on one. Both fail with
 * `503 SERVICE_UNAVAILABLE` when the database cannot be reached (`errors.ts`); a connection that
 * failed in a transaction is destroyed, never given to the next caller.
 *
 * Through a transaction pooler (`pooled`), statements are sent unnamed: a named statement is
 * prepared on one server connection and then asked for, or prepared again, on another.
 */
export function postgresRunner(pool: pg.Pool, { pooled = false, onNamedStatementsFailed }: PostgresRunnerOptions = {}): SqlRunner {
  let named = !pooled;
  const translated = new Map<string, Translated>();
  const translate = (statement: Statement): Translated => {
    const text = statementText(statement, 'postgres');
    let found = translated.get(text);
    if (found === undefined) {
      const names: string[] = [];
      const numbered = text.replace(PARAMETER, (_, name: string) => {
        const index = names.indexOf(name);
        if (index >= 0) return `$${index + 1}`;
        names.push(name);
        return `$${names.length}`;
      });
      found = { config: { name: PREPARABLE.test(text) ? `tessera-${translated.size + 1}` : undefined, text: numbered }, names };
      translated.set(text, found);
    }
    return found;
  };
  const query = async <Row extends pg.QueryResultRow>(on: pg.Pool | pg.PoolClient, statement: Statement, params?: SqlParams) => {
    const { config, names } = translate(statement);
    const values = names.map((name) => {
      if (params === undefined || !(name in params)) throw new Error(`no value for the parameter :${name}`);
      return params[name] ?? null;
    });
    const name = named ? config.name : undefined;
    try {
      return await on.query<Row>({ name, text: config.text, values, types });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (name !== undefined && code !== undefined && brokenNamedStatement(code, (error as Error).message)) {
        // Only a pooler that moves a connection's statements between server connections does this:
        // answered 503 (the client may try again), and unnamed from now on, which any pooler carries.
        if (named) {
          named = false;
          onNamedStatementsFailed?.({ code, message: (error as Error).message });
        }
        throw withCause(serviceUnavailable(), { code, message: (error as Error).message });
      }
      throw storeError(error, 'postgres');
    }
  };
  const on = (connection: pg.Pool | pg.PoolClient): SqlRunner => ({
    dialect: 'postgres',
    all: async <Row>(statement: Statement, params?: SqlParams) =>
      (await query<Row & pg.QueryResultRow>(connection, statement, params)).rows as Row[],
    get: async <Row>(statement: Statement, params?: SqlParams) =>
      (await query<Row & pg.QueryResultRow>(connection, statement, params)).rows[0] as Row | undefined,
    run: async (statement, params) => (await query(connection, statement, params)).rowCount ?? 0,
    transaction: connection === pool ? (work) => transaction(pool, work) : (work) => work(on(connection)),
  });
  const transaction = async <T>(pool: pg.Pool, work: (tx: SqlRunner) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw storeError(error, 'postgres');
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(on(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      const thrown = storeError(error, 'postgres');
      if (isServiceUnavailable(thrown)) {
        // The connection is lost, or in doubt: a statement pg stopped waiting for (query_timeout) may
        // still be queued behind it, in a transaction pooler, where no statement_timeout ends it; a
        // ROLLBACK would wait as long again. Destroying the connection ends its transaction.
        broken = error as Error;
      } else {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      }
      throw thrown;
    } finally {
      client.release(broken);
    }
  };
  return on(pool);
}
