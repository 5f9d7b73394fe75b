/** A JSON column: PostgreSQL's `jsonb` arrives parsed, SQLite's text does not. */
export function jsonColumn<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}
