import pg from 'pg';
import type { ColumnKind, StoreDump, TableSpec } from '../dump.js';
import { sqlStoreDump } from '../sql/dump.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';
import { connectionTo, heedConnectionErrors } from 'tessera-tokens/internal/store/postgres/connection.js';
import { migrate } from './migrations.js';
import { postgresRunner } from 'tessera-tokens/internal/store/postgres/runner.js';

/**
 * A copy's statements are few and large: sent unnamed, as through a transaction pooler, so that
 * `--from` and `--to` may go through one (PgBouncer in transaction mode). Its migrations' lock is
 * transaction-level, which such a pooler carries too.
 */
const UNNAMED = { pooled: true };

const ARRAY_TYPES: Record<ColumnKind, string> = { text: 'text[]', integer: 'bigint[]', blob: 'bytea[]', json: 'jsonb[]' };

/**
 * A PostgreSQL database's tables for `store copy` (`../dump.ts`). It is opened as the store opens it
 * (migrations applied), but a target is not given a first key: the copy brings the source's. The
 * source is read in one REPEATABLE READ transaction, so that every batch sees the same snapshot.
 * A batch is written in one statement (`unnest` of one array per column).
 */
export async function openPostgresDump(url: string, role: 'source' | 'target'): Promise<StoreDump> {
  const description = withoutPassword(url);
  const { Client, config } = connectionTo(url, `the ${role}'s URL`, () => {});
  const pool = new pg.Pool({ ...config, Client, application_name: 'tessera store copy', connectionTimeoutMillis: 5_000, max: 1 });
  heedConnectionErrors(pool, () => {}); // a lost connection fails the next statement, which says why
  let snapshot: Snapshot | undefined;
  try {
    // Opening speaks to the pool itself, so that an error says what the driver says.
    if (role === 'source') {
      const found = await pool.query<{ table: string | null }>("SELECT to_regclass('schema_migrations')::text AS table");
      if (found.rows[0]?.table == null) throw new Error('it is not a Tessera store (it has no schema_migrations table)');
    }
    await migrate(pool);
    if (role === 'source') snapshot = await openSnapshot(postgresRunner(pool, UNNAMED));
  } catch (error) {
    await pool.end().catch(() => {});
    throw new Error(`the ${role}, ${description}: ${(error as Error).message}${hintFor(error)}`, { cause: error });
  }

  const sql = snapshot?.tx ?? postgresRunner(pool, UNNAMED);
  const sequenceOf = async (table: TableSpec) =>
    (await sql.get<{ sequence: string | null }>('SELECT pg_get_serial_sequence(:table, :column) AS sequence', {
      table: table.name,
      column: table.counter,
    }))!.sequence;

  return sqlStoreDump({
    backend: 'postgres',
    description,
    db: sql,
    async insertRows(tx, table, rows) {
      const arrays = Object.fromEntries(table.columns.map((_, index) => [`c${index}`, rows.map((row) => row[index] ?? null)]));
      const types = table.columns.map((column, index) => `:c${index}::${ARRAY_TYPES[column.kind]}`).join(', ');
      // An identity column takes the source's ids only when told to.
      const overriding = table.counter !== undefined ? 'OVERRIDING SYSTEM VALUE' : '';
      await tx.run(
        `INSERT INTO ${table.name} (${table.columns.map((column) => column.name).join(', ')}) ${overriding} SELECT * FROM unnest(${types})`,
        arrays,
      );
    },
    async counterGiven(table) {
      const sequence = await sequenceOf(table);
      if (sequence === null) return 0;
      const given = await sql.get<{ last_value: number; is_called: boolean }>(`SELECT last_value, is_called FROM ${sequence}`);
      return given!.is_called ? given!.last_value : 0;
    },
    async setCounterPosition(table, position) {
      // keys has no sequence: a new key's id is the largest plus one (keys.ts).
      const sequence = await sequenceOf(table);
      if (sequence === null) return;
      await sql.run(
        `SELECT CASE WHEN p > 0 THEN setval(:sequence, p, true) ELSE setval(:sequence, 1, false) END
           FROM (SELECT GREATEST(:position::bigint, (SELECT coalesce(max(${table.counter}), 0) FROM ${table.name})) AS p) AS position`,
        { sequence, position },
      );
    },
    async close() {
      await snapshot?.end();
      await pool.end();
    },
  });
}

/** A transaction held open until `end`, whose statements all read one snapshot. */
interface Snapshot {
  tx: SqlRunner;
  end(): Promise<void>;
}

async function openSnapshot(sql: SqlRunner): Promise<Snapshot> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return new Promise((resolve, reject) => {
    const held = sql.transaction(async (tx) => {
      await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      resolve({
        tx,
        async end() {
          release();
          // It wrote nothing: a snapshot that failed has nothing to undo.
          await held.catch(() => {});
        },
      });
      await released;
    });
    held.catch(reject);
  });
}

/** What to do about an error opening the database, when it is a common one. */
function hintFor(error: unknown): string {
  // insufficient_privilege: since PostgreSQL 15 only a database's owner may create tables in its schema public.
  if ((error as { code?: string }).code === '42501')
    return ' (the user must own the database: createdb -O USER NAME, or ALTER DATABASE NAME OWNER TO USER)';
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
