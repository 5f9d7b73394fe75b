import { existsSync } from 'node:fs';
import type { StoreDump } from '../dump.js';
import { sqlStoreDump } from '../sql/dump.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';
import { openDatabase, retryWhileBusy } from 'tessera-tokens/internal/store/sqlite/connection.js';
import { migrate } from './migrations.js';
import { sqliteRunner } from 'tessera-tokens/internal/store/sqlite/runner.js';

/**
 * A SQLite file's tables for `store copy` (`../dump.ts`). It is opened as the store opens it
 * (migrations applied), but a target is not given a first key: the copy brings the source's. The
 * source is read in one read transaction, so that every batch sees the same snapshot.
 */
export async function openSqliteDump(path: string, role: 'source' | 'target'): Promise<StoreDump> {
  if (role === 'source' && (path === ':memory:' || !existsSync(path))) throw new Error(`there is no SQLite store at ${path}`);
  const db = openDatabase(path);
  const sql = sqliteRunner(db, path);
  try {
    if (role === 'source' && !(await hasTable(sql, 'schema_migrations'))) {
      throw new Error(`${path} is not a Tessera store (it has no schema_migrations table)`);
    }
    retryWhileBusy(() => migrate(db));
    if (role === 'source') {
      // A read transaction, which lets a server go on writing: the snapshot starts at its first read.
      db.exec('BEGIN');
      await sql.get('SELECT count(*) AS n FROM schema_migrations');
    }
  } catch (error) {
    db.close();
    throw error;
  }

  return sqlStoreDump({
    backend: 'sqlite',
    description: path,
    db: sql,
    async insertRows(tx, table, rows) {
      const names = table.columns.map((column) => column.name);
      const insert = `INSERT INTO ${table.name} (${names.join(', ')}) VALUES (${names.map((_, index) => `:v${index}`).join(', ')})`;
      for (const row of rows) await tx.run(insert, Object.fromEntries(row.map((value, index) => [`v${index}`, value])));
    },
    async counterGiven(table) {
      return (await sql.get<{ seq: number }>('SELECT seq FROM sqlite_sequence WHERE name = :name', { name: table.name }))?.seq ?? 0;
    },
    async setCounterPosition(table, position) {
      // Only AUTOINCREMENT tables keep a counter (sqlite_sequence); the others give the largest id plus one.
      if (!(await isAutoincrement(sql, table.name))) return;
      await sql.transaction(async (tx) => {
        const updated = await tx.run('UPDATE sqlite_sequence SET seq = max(seq, :position) WHERE name = :name', {
          name: table.name,
          position,
        });
        if (updated === 0)
          await tx.run('INSERT INTO sqlite_sequence (name, seq) VALUES (:name, :position)', { name: table.name, position });
      });
    },
    async close() {
      if (!db.open) return;
      if (role === 'source') db.exec('COMMIT');
      else db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  });
}

async function hasTable(sql: SqlRunner, name: string): Promise<boolean> {
  return (await sql.get("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = :name", { name })) !== undefined;
}

async function isAutoincrement(sql: SqlRunner, name: string): Promise<boolean> {
  const row = await sql.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :name", { name });
  return row !== undefined && /\bAUTOINCREMENT\b/i.test(row.sql);
}
