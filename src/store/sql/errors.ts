/** A taken key (a second app with a taken AppID or ClientID): PostgreSQL's `unique_violation`, SQLite's UNIQUE or PRIMARY KEY constraint. */
export function isUniqueViolation(error: unknown): boolean {
  if ((error as { code?: unknown }).code === '23505') return true;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY');
}
