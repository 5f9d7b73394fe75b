import type Database from 'libsql';
import { statementText, type SqlParams, type SqlRunner, type Statement } from '../sql/runner.js';
import type { SqliteDatabase } from './connection.js';

/**
 * The runner over one SQLite connection. Statements are prepared once and answered synchronously.
 * A transaction's work may await between its statements; while it is open, every other statement of
 * the process waits for it to end, so that none joins it by accident, and transactions take turns.
 */
export function sqliteRunner(db: SqliteDatabase): SqlRunner {
  const prepared = new Map<string, Database.Statement>();
  const prepare = (statement: Statement) => {
    const text = statementText(statement, 'sqlite');
    let found = prepared.get(text);
    if (found === undefined) {
      found = db.prepare(text);
      prepared.set(text, found);
    }
    return found;
  };

  const allNow = <Row>(statement: Statement, params?: SqlParams) => prepare(statement).all(bind(params)) as Row[];
  const getNow = <Row>(statement: Statement, params?: SqlParams) => prepare(statement).get(bind(params)) as Row | undefined;
  const runNow = (statement: Statement, params?: SqlParams) => prepare(statement).run(bind(params)).changes;
  const inside: SqlRunner = { dialect: 'sqlite', all: allNow, get: getNow, run: runNow, transaction: (work) => work(inside) };

  /** The end of the open transaction, if there is one. */
  let open: Promise<void> | undefined;
  const afterOpen = async <T>(step: () => T): Promise<T> => {
    while (open !== undefined) await open;
    return step();
  };

  return {
    dialect: 'sqlite',
    all: <Row>(statement: Statement, params?: SqlParams) =>
      open === undefined ? allNow<Row>(statement, params) : afterOpen(() => allNow<Row>(statement, params)),
    get: <Row>(statement: Statement, params?: SqlParams) =>
      open === undefined ? getNow<Row>(statement, params) : afterOpen(() => getNow<Row>(statement, params)),
    run: (statement, params) => (open === undefined ? runNow(statement, params) : afterOpen(() => runNow(statement, params))),
    async transaction(work) {
      while (open !== undefined) await open;
      let end!: () => void;
      open = new Promise((resolve) => (end = resolve));
      try {
        db.exec('BEGIN IMMEDIATE');
        const result = await work(inside);
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      } finally {
        open = undefined;
        end();
      }
    },
  };
}

/** libsql binds neither `undefined` nor booleans. */
function bind(params: SqlParams | undefined): Record<string, unknown> {
  if (params === undefined) return {};
  const bound: Record<string, unknown> = {};
  for (const name in params) {
    const value = params[name];
    bound[name] = value === undefined ? null : typeof value === 'boolean' ? Number(value) : value;
  }
  return bound;
}
