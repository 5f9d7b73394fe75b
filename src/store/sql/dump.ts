import { integerOf, type Row, type StoreDump, type TableSpec, type Value } from '../dump.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

/**
 * What a dialect's dump (`sqlite/dump.ts`, `postgres/dump.ts`) gives the tables read and written
 * here: where the store is, a source's snapshot, the batch insert, the id counters and the end.
 */
export interface DumpDialect {
  readonly backend: 'sqlite' | 'postgres';
  /** Where it is, for messages: a file path, or the URL without its password. */
  readonly description: string;
  /** Every statement of the dump runs on it; a source's read in its one snapshot. */
  readonly db: SqlRunner;
  /** Inserts rows as they are, ids and all, in the transaction `tx`. */
  insertRows(tx: SqlRunner, table: TableSpec, rows: Row[]): Promise<void>;
  /** The last value the table's counter gave, as the counter itself keeps it (0 for none). */
  counterGiven(table: TableSpec): Promise<number>;
  /** Sets the table's counter so that the next value it gives is above `position`. */
  setCounterPosition(table: TableSpec, position: number): Promise<void>;
  close(): Promise<void>;
}

/** A store's tables for `store copy` (`../dump.ts`), read and written over the runner on either dialect. */
export function sqlStoreDump(dialect: DumpDialect): StoreDump {
  const { db } = dialect;
  const columnList = (table: TableSpec) => table.columns.map((column) => column.name).join(', ');
  const toRow = (table: TableSpec, record: Record<string, unknown>): Row =>
    table.columns.map(({ name, kind }) => {
      const value = record[name];
      if (value === null || value === undefined) return null;
      if (kind === 'integer') return integerOf(value, `${table.name}.${name}`);
      // PostgreSQL's jsonb arrives parsed, SQLite's JSON as its text.
      if (kind === 'json') return db.dialect === 'postgres' ? JSON.stringify(value) : (value as string);
      // libsql's `all` reads bytes as an ArrayBuffer.
      if (kind === 'blob') return Buffer.from(value as Uint8Array);
      return value as string;
    });
  const keyColumn = (table: TableSpec) => ({ ...table, columns: table.columns.filter((column) => column.name === table.key[0]) });
  const parameters = (values: Value[]) => Object.fromEntries(values.map((value, index) => [`v${index}`, value]));

  return {
    backend: dialect.backend,
    description: dialect.description,
    async schemaVersion() {
      return (await db.get<{ version: number }>('SELECT max(version) AS version FROM schema_migrations'))!.version;
    },
    async count(table) {
      return (await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table.name}`))!.n;
    },
    async read(table, after, limit) {
      const key = table.key.join(', ');
      const where = after === undefined ? '' : `WHERE (${key}) > (${after.map((_, index) => `:v${index}`).join(', ')})`;
      const rows = await db.all<Record<string, unknown>>(
        `SELECT ${columnList(table)} FROM ${table.name} ${where} ORDER BY ${key} LIMIT :limit`,
        {
          ...parameters(after ?? []),
          limit,
        },
      );
      return rows.map((record) => toRow(table, record));
    },
    async readKeys(table, keys) {
      const rows: Row[] = [];
      for (const key of keys) {
        const found = await db.all<Record<string, unknown>>(`SELECT ${columnList(table)} FROM ${table.name} WHERE ${table.key[0]} = :key`, {
          key,
        });
        rows.push(...found.map((record) => toRow(table, record)));
      }
      return rows;
    },
    async sampleKeys(table, limit, where) {
      const key = keyColumn(table);
      const rows = await db.all<Record<string, unknown>>(
        `SELECT ${table.key[0]} FROM ${table.name} ${where === undefined ? '' : `WHERE ${where}`} ORDER BY random() LIMIT :limit`,
        { limit },
      );
      return rows.map((record) => toRow(key, record)[0]!);
    },
    async write(table, rows) {
      if (rows.length > 0) await db.transaction((tx) => dialect.insertRows(tx, table, rows));
    },
    async clear(table) {
      await db.run(`DELETE FROM ${table.name}`);
    },
    async counterPosition(table) {
      const largest = (await db.get<{ n: unknown }>(`SELECT coalesce(max(${table.counter}), 0) AS n FROM ${table.name}`))!.n;
      return Math.max(integerOf(largest, table.name), await dialect.counterGiven(table));
    },
    setCounterPosition: (table, position) => dialect.setCounterPosition(table, position),
    close: () => dialect.close(),
  };
}
