import pg from 'pg';
import { isServiceUnavailable } from '../../error-catalogue.js';
import { statementText, type SqlParams, type SqlRunner, type Statement } from '../sql/runner.js';
import { unavailableOr } from './errors.js';

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
 * The runner over a pool: a statement on any connection, or a transaction on one. Both fail with
 * `503 SERVICE_UNAVAILABLE` when the database cannot be reached (`errors.ts`); a connection that
 * failed in a transaction is destroyed, never given to the next caller.
 *
 * Through a transaction pooler (`pooled`), statements are sent unnamed: a named statement is
 * prepared on one server connection and then asked for, or prepared again, on another.
 */
export function postgresRunner(pool: pg.Pool, { pooled = false }: { pooled?: boolean } = {}): SqlRunner {
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
      found = { config: { name: !pooled && PREPARABLE.test(text) ? `tessera-${translated.size + 1}` : undefined, text: numbered }, names };
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
    try {
      return await on.query<Row>({ ...config, values, types });
    } catch (error) {
      throw unavailableOr(error);
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
      throw unavailableOr(error);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(on(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      const thrown = unavailableOr(error);
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
