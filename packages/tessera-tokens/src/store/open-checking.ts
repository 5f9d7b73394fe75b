import type { PostgresStoreOptions } from './postgres/connection.js';
import type { OpenCheckingStore } from './checking.js';
import { importBackend, parseDatabaseUrl } from './location.js';

/**
 * Opens what another service's `TesseraVerifier` reads of the store `databaseUrl` names
 * (`CheckingStore`): a store Tessera of this release made and migrated, never created, migrated
 * nor written here; loading only that store's driver, as `openStore` does.
 */
export async function openCheckingStore(databaseUrl: string, postgres: PostgresStoreOptions = {}): Promise<OpenCheckingStore> {
  const location = parseDatabaseUrl(databaseUrl);
  if (location.backend === 'sqlite') {
    const { openSqliteCheckingStore } = await importBackend('libsql', () => import('./sqlite/checking.js'));
    return openSqliteCheckingStore(location.path);
  }
  const { openPostgresCheckingStore } = await importBackend('pg', () => import('./postgres/checking.js'));
  return openPostgresCheckingStore(location.url, postgres);
}
