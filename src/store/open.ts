import type { PostgresStoreOptions } from 'tessera-tokens/internal/store/postgres/connection.js';
import type { Store } from './store.js';
import { importBackend, parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';

export interface OpenStoreOptions extends PostgresStoreOptions {
  /** SQLite: checkpoint on a thread of its own (a serving process; `sqlite/checkpointer.ts`), telling `onWarning` of its failures. */
  checkpointsOffThread?: boolean;
}

/**
 * Opens the store `databaseUrl` names. Each backend's module is imported only when it is opened, so
 * a process loads the driver of its own store only (`libsql` or `pg`), and needs only that one
 * installed: another service mounting the middleware installs its own driver (docs/middleware.md).
 */
export async function openStore(databaseUrl: string | undefined, options: OpenStoreOptions = {}): Promise<Store> {
  const location = parseDatabaseUrl(databaseUrl);
  if (location.backend === 'sqlite') {
    const { openSqliteStore } = await importBackend('libsql', () => import('./sqlite/store.js'));
    const { onWarning } = options;
    return openSqliteStore(
      location.path,
      options.checkpointsOffThread === true && onWarning !== undefined ? { checkpointsOffThread: { onWarning } } : {},
    );
  }
  const { openPostgresStore } = await importBackend('pg', () => import('./postgres/store.js'));
  return openPostgresStore(location.url, options);
}
