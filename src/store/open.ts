import { resolve } from 'node:path';
import { parsePostgresUrl } from './postgres/multi-host-url.js';
import type { PostgresStoreOptions } from './postgres/store.js';
import type { OpenCheckingStore } from './checking.js';
import type { Store } from './store.js';

export const DEFAULT_SQLITE_PATH = './data/tessera.db';

export type StoreLocation = { backend: 'sqlite'; path: string } | { backend: 'postgres'; url: string };

/**
 * `DATABASE_URL`: unset, a file path or `sqlite:PATH` for SQLite; `postgres://…` for PostgreSQL, with
 * one host or several as libpq reads them (postgres/multi-host-url.ts).
 */
export function parseDatabaseUrl(databaseUrl: string | undefined): StoreLocation {
  const value = databaseUrl?.trim() ?? '';
  if (value === '') return { backend: 'sqlite', path: resolve(DEFAULT_SQLITE_PATH) };
  if (/^postgres(ql)?:\/\//i.test(value)) {
    parsePostgresUrl(value);
    return { backend: 'postgres', url: value };
  }
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') throw new Error('DATABASE_URL "sqlite:" needs a file path, e.g. sqlite:./data/tessera.db');
    return { backend: 'sqlite', path: path === ':memory:' ? path : resolve(path) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new Error('DATABASE_URL must be a file path, sqlite:PATH, or postgres://…');
  }
  return { backend: 'sqlite', path: resolve(value) };
}

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
  const { openPostgresCheckingStore } = await importBackend('pg', () => import('./postgres/store.js'));
  return openPostgresCheckingStore(location.url, postgres);
}

/** Imports a backend's module; if its driver is not installed, says which package the store needs. */
export async function importBackend<Backend>(driver: string, load: () => Promise<Backend>): Promise<Backend> {
  try {
    return await load();
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (code === 'ERR_MODULE_NOT_FOUND' && message?.includes(`'${driver}'`) === true) {
      throw new Error(`This DATABASE_URL needs the package ${driver}, which is not installed (npm install ${driver}).`, { cause: error });
    }
    throw error;
  }
}
