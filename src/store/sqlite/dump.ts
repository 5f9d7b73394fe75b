import { existsSync } from 'node:fs';
import { integerOf, type Row, type StoreDump, type TableSpec, type Value } from '../dump.js';
import { immediateTransaction, openDatabase, retryWhileBusy, type SqliteDatabase } from './connection.js';
import { migrate } from './migrations.js';

type Statement = ReturnType<SqliteDatabase['prepare']>;

/**
 * A SQLite file's tables for `store copy` (`../dump.ts`). It is opened as the store opens it
 * (migrations applied), but a target is not given a first key: the copy brings the source's. The
 * source is read in one read transaction, so that every batch sees the same snapshot.
 */
export function openSqliteDump(path: string, role: 'source' | 'target'): StoreDump {
  if (role === 'source' && (path === ':memory:' || !existsSync(path))) throw new Error(`there is no SQLite store at ${path}`);
  const db = openDatabase(path);
  try {
    if (role === 'source' && !hasTable(db, 'schema_migrations')) throw new Error(`${path} is not a Tessera store (it has no schema_migrations table)`);
    retryWhileBusy(() => migrate(db));
    if (role === 'source') {
      db.exec('BEGIN');
      db.prepare('SELECT count(*) AS n FROM schema_migrations').get(); // the snapshot starts here
    }
  } catch (error) {
    db.close();
    throw error;
  }

  const statements = new Map<string, Statement>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
  const columnList = (table: TableSpec) => table.columns.map((column) => column.name).join(', ');
  const toRow = (table: TableSpec, values: unknown[]): Row =>
    values.map((value, index) => {
      if (value === null) return null;
      const { kind, name } = table.columns[index]!;
      if (kind === 'integer') return integerOf(value, `${table.name}.${name}`);
      if (kind === 'blob') return Buffer.from(value as Uint8Array);
      return value as string;
    });
  const parameters = (values: Value[]) => Object.fromEntries(values.map((value, index) => [`v${index}`, value]));
  const placeholders = (count: number, from = 0) => Array.from({ length: count }, (_, index) => `:v${from + index}`).join(', ');

  return {
    backend: 'sqlite',
    description: path,
    async schemaVersion() {
      return (db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number }).version;
    },
    async count(table) {
      return (prepared(`SELECT count(*) AS n FROM ${table.name}`).get({}) as { n: number }).n;
    },
    async read(table, after, limit) {
      const key = table.key.join(', ');
      const where = after === undefined ? '' : `WHERE (${key}) > (${placeholders(after.length)})`;
      const statement = prepared(`SELECT ${columnList(table)} FROM ${table.name} ${where} ORDER BY ${key} LIMIT :limit`);
      const rows = statement.raw(true).all({ ...parameters(after ?? []), limit }) as unknown[][];
      return rows.map((values) => toRow(table, values));
    },
    async readKeys(table, keys) {
      const statement = prepared(`SELECT ${columnList(table)} FROM ${table.name} WHERE ${table.key[0]} = :v0`).raw(true);
      return keys.flatMap((key) => (statement.all(parameters([key])) as unknown[][]).map((values) => toRow(table, values)));
    },
    async sampleKeys(table, limit, where) {
      const statement = prepared(`SELECT ${table.key[0]} FROM ${table.name} ${where === undefined ? '' : `WHERE ${where}`} ORDER BY random() LIMIT :limit`);
      return (statement.raw(true).all({ limit }) as unknown[][]).map((values) => toRow({ ...table, columns: table.columns.filter((column) => column.name === table.key[0]) }, values)[0]!);
    },
    async write(table, rows) {
      const insert = prepared(`INSERT INTO ${table.name} (${columnList(table)}) VALUES (${placeholders(table.columns.length)})`);
      immediateTransaction(db, () => {
        for (const row of rows) insert.run(parameters(row));
      })();
    },
    async clear(table) {
      db.prepare(`DELETE FROM ${table.name}`).run();
    },
    async counterPosition(table) {
      const column = table.counter!;
      const largest = (db.prepare(`SELECT coalesce(max(${column}), 0) AS n FROM ${table.name}`).get() as { n: number }).n;
      const given = db.prepare('SELECT seq FROM sqlite_sequence WHERE name = :name').get({ name: table.name }) as { seq: number } | undefined;
      return Math.max(largest, given?.seq ?? 0);
    },
    async setCounterPosition(table, position) {
      // Only AUTOINCREMENT tables keep a counter (sqlite_sequence); the others give the largest id plus one.
      if (!isAutoincrement(db, table.name)) return;
      immediateTransaction(db, () => {
        const updated = db.prepare('UPDATE sqlite_sequence SET seq = max(seq, :position) WHERE name = :name').run({ name: table.name, position });
        if (updated.changes === 0) db.prepare('INSERT INTO sqlite_sequence (name, seq) VALUES (:name, :position)').run({ name: table.name, position });
      })();
    },
    async close() {
      if (!db.open) return;
      if (role === 'source') db.exec('COMMIT');
      else db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  };
}

function hasTable(db: SqliteDatabase, name: string): boolean {
  return db.prepare("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = :name").get({ name }) !== undefined;
}

function isAutoincrement(db: SqliteDatabase, name: string): boolean {
  const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :name").get({ name }) as { sql: string } | undefined;
  return row !== undefined && /\bAUTOINCREMENT\b/i.test(row.sql);
}
