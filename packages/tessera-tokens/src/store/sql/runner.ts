import type { MaybePromise } from '../../maybe-promise.js';

export type SqlDialect = 'sqlite' | 'postgres';

/** Named parameters: `:name` in the statement, `name` here. `undefined` binds as NULL, booleans as 1/0 on SQLite. */
export type SqlParams = Readonly<Record<string, unknown>>;

/** A statement written once for both dialects, or once per dialect where their SQL differs. */
export type Statement = string | { readonly sqlite: string; readonly postgres: string };

/**
 * What every table's statements run on: one statement, or several in one transaction, on either
 * dialect. SQLite answers synchronously (a value) outside a transaction, PostgreSQL with a promise;
 * `await` takes both. Rows come back alike from both drivers: integers as numbers (PostgreSQL's
 * `bigint` included); bytes as bytes, which `Buffer.from` makes a Buffer of (libsql's `all` gives
 * ArrayBuffers); JSON columns differ (`rows.ts`). SQLite binds a missing parameter as NULL,
 * PostgreSQL's runner throws: the store suite, which runs on both, finds a misspelt name.
 */
export interface SqlRunner {
  readonly dialect: SqlDialect;
  /** Every row the statement returns. */
  all<Row>(statement: Statement, params?: SqlParams): MaybePromise<Row[]>;
  /** The first row the statement returns, or undefined. */
  get<Row>(statement: Statement, params?: SqlParams): MaybePromise<Row | undefined>;
  /** How many rows the statement inserted, updated or deleted. */
  run(statement: Statement, params?: SqlParams): MaybePromise<number>;
  /**
   * `work` in one transaction, committed when it resolves and rolled back when it throws. Its
   * statements go through the runner it is given; SQLite's transactions take the write lock first
   * (`BEGIN IMMEDIATE`), and other statements of the process wait for them. Inside a transaction,
   * `transaction` runs `work` in the same one.
   */
  transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T>;
}

/** The text of `statement` in `dialect`. */
export function statementText(statement: Statement, dialect: SqlDialect): string {
  return typeof statement === 'string' ? statement : statement[dialect];
}

/**
 * `select` with PostgreSQL's row lock: `FOR UPDATE`, `FOR NO KEY UPDATE` make concurrent
 * transactions on the row take turns; `FOR SHARE` keeps the row from changing until the transaction
 * ends. SQLite has none and needs none: its transactions take the write lock first and always take
 * turns.
 */
export function withRowLock(select: string, lock: 'UPDATE' | 'NO KEY UPDATE' | 'SHARE'): Statement {
  return { sqlite: select, postgres: `${select} FOR ${lock}` };
}
