import { StoreConflictError } from '../../transaction.js';
import { unavailableOr } from '../postgres/errors.js';
import type { SqlDialect } from './runner.js';

/**
 * The one translation of a driver's errors, made by each dialect's runner for every statement and
 * transaction (and by PostgreSQL's opening), so that nothing above the runner reads a driver's
 * codes: a taken key (PostgreSQL's `unique_violation`, SQLite's UNIQUE or PRIMARY KEY constraint)
 * becomes `StoreConflictError`; a PostgreSQL that cannot be reached now, `503 SERVICE_UNAVAILABLE`
 * with `Retry-After` (`postgres/errors.ts` lists what says so). Any other error, and an error
 * translated already (a service's own, thrown in a transaction), as it is.
 */
export function storeError(error: unknown, dialect: SqlDialect): unknown {
  if (isUniqueViolation(error)) return new StoreConflictError();
  return dialect === 'postgres' ? unavailableOr(error) : error;
}

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
