import { resolve } from 'node:path';
import type Database from 'libsql';
import { statementText, type SqlParams, type SqlRunner, type Statement } from '../sql/runner.js';
import type { SqliteDatabase } from './connection.js';
import { storeError } from '../sql/errors.js';

/** Where a process's connections to one file learn of each other's open transaction. */
interface Gate {
  /** The end of the open transaction, if there is one. */
  open: Promise<void> | undefined;
}
const gates = new Map<string, Gate>();

/**
 * The runner over one SQLite connection to `path`. Statements are prepared once and answered
 * synchronously. A transaction's work may await between its statements; while it is open, every
 * other statement of the process on the same file waits for it to end, on this connection or another
 * (a second store, a verifier), so that none joins it by accident or waits on the file's lock with
 * the event loop blocked. Other processes wait on the lock (`busy_timeout`).
 */
export function sqliteRunner(db: SqliteDatabase, path: string): SqlRunner {
  const gate = gateOf(path);
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

  // Every statement's error is translated once, here (`storeError`): a taken key is `StoreConflictError`.
  const allNow = <Row>(statement: Statement, params?: SqlParams) => {
    try {
      return prepare(statement).all(bind(params)) as Row[];
    } catch (error) {
      throw storeError(error, 'sqlite');
    }
  };
  const getNow = <Row>(statement: Statement, params?: SqlParams) => {
    try {
      return prepare(statement).get(bind(params)) as Row | undefined;
    } catch (error) {
      throw storeError(error, 'sqlite');
    }
  };
  const runNow = (statement: Statement, params?: SqlParams) => {
    try {
      return prepare(statement).run(bind(params)).changes;
    } catch (error) {
      throw storeError(error, 'sqlite');
    }
  };
  const inside: SqlRunner = { dialect: 'sqlite', all: allNow, get: getNow, run: runNow, transaction: (work) => work(inside) };

  const afterOpen = async <T>(step: () => T): Promise<T> => {
    while (gate.open !== undefined) await gate.open;
    return step();
  };

  return {
    dialect: 'sqlite',
    all: <Row>(statement: Statement, params?: SqlParams) =>
      gate.open === undefined ? allNow<Row>(statement, params) : afterOpen(() => allNow<Row>(statement, params)),
    get: <Row>(statement: Statement, params?: SqlParams) =>
      gate.open === undefined ? getNow<Row>(statement, params) : afterOpen(() => getNow<Row>(statement, params)),
    run: (statement, params) => (gate.open === undefined ? runNow(statement, params) : afterOpen(() => runNow(statement, params))),
    async transaction(work) {
      while (gate.open !== undefined) await gate.open;
      // libsql aborts the process on `exec` or `inTransaction` once the connection is closed (a
      // panic, not an error), where a statement gets a TypeError: a transaction gets the same.
      if (!db.open) throw new TypeError('The database connection is not open');
      let end!: () => void;
      gate.open = new Promise((resolve) => (end = resolve));
      try {
        db.exec('BEGIN IMMEDIATE');
        const result = await work(inside);
        if (!db.open) throw new TypeError('The database connection is not open');
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.open && db.inTransaction) db.exec('ROLLBACK');
        throw error;
      } finally {
        gate.open = undefined;
        end();
      }
    },
  };
}

function gateOf(path: string): Gate {
  if (path === ':memory:') return { open: undefined };
  const key = resolve(path);
  let gate = gates.get(key);
  if (gate === undefined) {
    gate = { open: undefined };
    gates.set(key, gate);
  }
  return gate;
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
