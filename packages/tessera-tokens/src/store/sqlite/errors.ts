/** `SQLITE_BUSY` and its extended codes: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
