import pg from 'pg';
import { integerOf, type ColumnKind, type Row, type StoreDump, type TableSpec, type Value } from '../dump.js';
import { heedConnectionErrors } from './connection.js';
import { migrate } from './migrations.js';

const ARRAY_TYPES: Record<ColumnKind, string> = { text: 'text[]', integer: 'bigint[]', blob: 'bytea[]', json: 'jsonb[]' };

/**
 * A PostgreSQL database's tables for `store copy` (`../dump.ts`). It is opened as the store opens it
 * (migrations applied), but a target is not given a first key: the copy brings the source's. The
 * source is read in one REPEATABLE READ transaction, so that every batch sees the same snapshot.
 * A batch is written in one statement (`unnest` of one array per column).
 */
export async function openPostgresDump(url: string, role: 'source' | 'target'): Promise<StoreDump> {
  const description = withoutPassword(url);
  const client = new pg.Client({ connectionString: url, application_name: 'tessera store copy', connectionTimeoutMillis: 5_000 });
  client.on('error', () => {}); // a lost connection fails the next query, which says why
  try {
    await client.connect();
    if (role === 'source') {
      const found = await client.query<{ table: string | null }>("SELECT to_regclass('schema_migrations')::text AS table");
      if (found.rows[0]?.table == null) throw new Error('it is not a Tessera store (it has no schema_migrations table)');
    }
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    heedConnectionErrors(pool, () => {}); // a lost connection fails the migration, which says why
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    if (role === 'source') await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  } catch (error) {
    await client.end().catch(() => {});
    throw new Error(`the ${role}, ${description}: ${(error as Error).message}${hintFor(error)}`, { cause: error });
  }

  const columnList = (table: TableSpec) => table.columns.map((column) => column.name).join(', ');
  const kindOf = (table: TableSpec, name: string) => table.columns.find((column) => column.name === name)!.kind;
  const toRow = (table: TableSpec, values: unknown[]): Row =>
    values.map((value, index) => {
      if (value === null) return null;
      const { kind, name } = table.columns[index]!;
      if (kind === 'integer') return integerOf(value, `${table.name}.${name}`);
      if (kind === 'json') return JSON.stringify(value);
      return value as string | Buffer;
    });
  const query = async (text: string, values: unknown[] = []) => (await client.query({ text, values, rowMode: 'array' })).rows as unknown[][];
  const sequenceOf = async (table: TableSpec) =>
    (await query('SELECT pg_get_serial_sequence($1, $2)', [table.name, table.counter]))[0]![0] as string | null;

  return {
    backend: 'postgres',
    description,
    async schemaVersion() {
      return Number((await query('SELECT max(version) FROM schema_migrations'))[0]![0]);
    },
    async count(table) {
      return Number((await query(`SELECT count(*) FROM ${table.name}`))[0]![0]);
    },
    async read(table, after, limit) {
      const key = table.key.join(', ');
      const where = after === undefined ? '' : `WHERE (${key}) > (${after.map((_, index) => `$${index + 2}`).join(', ')})`;
      const rows = await query(`SELECT ${columnList(table)} FROM ${table.name} ${where} ORDER BY ${key} LIMIT $1`, [limit, ...(after ?? [])]);
      return rows.map((values) => toRow(table, values));
    },
    async readKeys(table, keys) {
      const key = table.key[0]!;
      const rows = await query(`SELECT ${columnList(table)} FROM ${table.name} WHERE ${key} = ANY($1::${ARRAY_TYPES[kindOf(table, key)]})`, [keys]);
      return rows.map((values) => toRow(table, values));
    },
    async sampleKeys(table, limit, where) {
      const key = table.key[0]!;
      const rows = await query(`SELECT ${key} FROM ${table.name} ${where === undefined ? '' : `WHERE ${where}`} ORDER BY random() LIMIT $1`, [limit]);
      return rows.map((values) => toRow({ ...table, columns: table.columns.filter((column) => column.name === key) }, values)[0]!);
    },
    async write(table, rows) {
      if (rows.length === 0) return;
      const arrays = table.columns.map((_, index) => rows.map((row) => row[index] ?? null));
      const types = table.columns.map((column, index) => `$${index + 1}::${ARRAY_TYPES[column.kind]}`).join(', ');
      // An identity column takes the source's ids only when told to.
      const overriding = table.counter !== undefined ? 'OVERRIDING SYSTEM VALUE' : '';
      await client.query({
        text: `INSERT INTO ${table.name} (${columnList(table)}) ${overriding} SELECT * FROM unnest(${types})`,
        values: arrays as Value[][],
      });
    },
    async clear(table) {
      await client.query(`DELETE FROM ${table.name}`);
    },
    async counterPosition(table) {
      const largest = integerOf((await query(`SELECT coalesce(max(${table.counter}), 0) FROM ${table.name}`))[0]![0], table.name);
      const sequence = await sequenceOf(table);
      if (sequence === null) return largest;
      const [lastValue, isCalled] = (await query(`SELECT last_value, is_called FROM ${sequence}`))[0]!;
      return Math.max(largest, isCalled === true ? integerOf(lastValue, sequence) : 0);
    },
    async setCounterPosition(table, position) {
      // keys has no sequence: a new key's id is the largest plus one (keys.ts).
      const sequence = await sequenceOf(table);
      if (sequence === null) return;
      await client.query(
        `SELECT CASE WHEN p > 0 THEN setval($1, p, true) ELSE setval($1, 1, false) END
           FROM (SELECT GREATEST($2::bigint, (SELECT coalesce(max(${table.counter}), 0) FROM ${table.name})) AS p) AS position`,
        [sequence, position],
      );
    },
    async close() {
      if (role === 'source') await client.query('COMMIT').catch(() => {});
      await client.end();
    },
  };
}

/** What to do about an error opening the database, when it is a common one. */
function hintFor(error: unknown): string {
  // insufficient_privilege: since PostgreSQL 15 only a database's owner may create tables in its schema public.
  if ((error as { code?: string }).code === '42501') return ' (the user must own the database: createdb -O USER NAME, or ALTER DATABASE NAME OWNER TO USER)';
  return '';
}

/** The URL to show: its password, after the user name or as a parameter, masked. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    for (const name of [...parsed.searchParams.keys()]) {
      if (/password/i.test(name)) parsed.searchParams.set(name, '***');
    }
    return parsed.toString();
  } catch {
    return 'the PostgreSQL database';
  }
}
