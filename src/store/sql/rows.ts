/** A JSON column: PostgreSQL's `jsonb` arrives parsed, SQLite's text does not. */
export function jsonColumn<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** A boolean expression: PostgreSQL's `boolean`, SQLite's 0 or 1. */
export function booleanColumn(value: unknown): boolean {
  return value === true || value === 1;
}

/** A nullable number column as the domain keeps it. */
export function numberOrNull(value: number | null): number | null {
  return value === null ? null : Number(value);
}
