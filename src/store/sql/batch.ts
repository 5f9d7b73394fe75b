import type { SqlDialect, SqlParams, Statement } from 'tessera-tokens/internal/store/sql/runner.js';

/** How a column of a batch is sent: bytes, text, an integer, or JSON (a string the caller made). */
export type BatchColumnType = 'bytes' | 'text' | 'bigint' | 'json';

const POSTGRES_ARRAY: Record<BatchColumnType, string> = { bytes: 'bytea[]', text: 'text[]', bigint: 'bigint[]', json: 'jsonb[]' };

/**
 * A batch of rows inserted by one statement, the way each dialect reads many rows from one
 * parameter: SQLite as a JSON array of rows (`json_each`, bytes in hex), PostgreSQL as one array per
 * column (`unnest`). Half the cost of a statement per row, which the token endpoint pays for every
 * token and its event.
 */
export interface BatchInsert {
  statement: Statement;
  params(dialect: SqlDialect, rows: readonly (readonly unknown[])[]): SqlParams;
}

/**
 * `INSERT INTO table (columns) SELECT … WHERE true tail`: `tail` is an `ON CONFLICT` clause or
 * nothing. (`WHERE true` tells SQLite's parser that ON CONFLICT belongs to the INSERT, not to a join.)
 */
export function batchInsert(table: string, columns: readonly BatchColumn[], tail = ''): BatchInsert {
  const names = columns.map(([name]) => name).join(', ');
  return {
    statement: {
      sqlite: `INSERT INTO ${table} (${names}) SELECT ${sqliteValues(columns)} FROM json_each(:rows) WHERE true ${tail}`,
      postgres: `INSERT INTO ${table} (${names}) SELECT * FROM unnest(${postgresArrays(columns)}) WHERE true ${tail}`,
    },
    params: batchParams(columns),
  };
}

/**
 * The rows of a batch as a table `alias` whose columns have the columns' names, for a statement's
 * FROM clause (an insert that joins its rows with what they must match, say), and its parameters.
 */
export function batchRows(
  columns: readonly BatchColumn[],
  alias: string,
): Omit<BatchInsert, 'statement'> & { from: { sqlite: string; postgres: string } } {
  const sqliteColumns = columns.map(([name, type], index) => `${sqliteValue(type, index)} AS ${name}`).join(', ');
  const names = columns.map(([name]) => name).join(', ');
  return {
    from: {
      sqlite: `(SELECT ${sqliteColumns} FROM json_each(:rows)) AS ${alias}`,
      postgres: `unnest(${postgresArrays(columns)}) AS ${alias} (${names})`,
    },
    params: batchParams(columns),
  };
}

/** A column of a batch: its name, and how it is sent. */
export type BatchColumn = readonly [name: string, type: BatchColumnType];

function sqliteValue(type: BatchColumnType, index: number): string {
  return type === 'bytes' ? `unhex(value ->> ${index})` : `value ->> ${index}`;
}

function sqliteValues(columns: readonly BatchColumn[]): string {
  return columns.map(([, type], index) => sqliteValue(type, index)).join(', ');
}

function postgresArrays(columns: readonly BatchColumn[]): string {
  return columns.map(([, type], index) => `:c${index}::${POSTGRES_ARRAY[type]}`).join(', ');
}

function batchParams(columns: readonly BatchColumn[]): BatchInsert['params'] {
  const bytes = columns.map(([, type]) => type === 'bytes');
  const hasBytes = bytes.includes(true);
  return (dialect, rows) => {
    if (dialect === 'sqlite') {
      const hex = (row: readonly unknown[]) =>
        row.map((value, index) => (bytes[index] && value !== null ? (value as Buffer).toString('hex') : value));
      return { rows: JSON.stringify(hasBytes ? rows.map(hex) : rows) };
    }
    return Object.fromEntries(columns.map((_, index) => [`c${index}`, rows.map((row) => row[index])]));
  };
}
