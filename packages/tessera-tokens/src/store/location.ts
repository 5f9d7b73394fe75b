import { resolve } from 'node:path';
import { parsePostgresUrl } from './postgres/multi-host-url.js';

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
