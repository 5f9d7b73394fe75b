import type { PostgresStoreOptions } from 'tessera-tokens/internal/store/postgres/connection.js';
import type { Store } from './store.js';
import { importBackend, parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';

/**
 * Opens the store `databaseUrl` names. Each backend's module is imported only when it is opened, so
 * a process loads the driver of its own store only (`libsql` or `pg`), and needs only that one
 * installed: another service mounting the middleware installs its own driver (docs/middleware.md).
 */
export async function openStore(databaseUrl: string | undefined, postgres: PostgresStoreOptions = {}): Promise<Store> {
  const location = parseDatabaseUrl(databaseUrl);
  if (location.backend === 'sqlite') {
    const { openSqliteStore } = await importBackend('libsql', () => import('./sqlite/store.js'));
    return openSqliteStore(location.path);
  }
  const { openPostgresStore } = await importBackend('pg', () => import('./postgres/store.js'));
  return openPostgresStore(location.url, postgres);
}
