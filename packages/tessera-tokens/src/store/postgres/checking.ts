import { currentBuild, KNOWN_MIGRATIONS, SchemaRefused } from '../../release.js';
import type { OpenCheckingStore } from '../checking.js';
import { readingRefusal } from '../schema.js';
import { checkingReads } from '../sql/checking-reads.js';
import type { PostgresStoreOptions } from './connection.js';
import { readSchemaState } from './schema-state.js';
import { openPostgres } from './open.js';

/**
 * What another service's `TesseraVerifier` reads (`CheckingStore`), over the same pool, pooler
 * checks and LISTEN connection as the server's store, on a schema Tessera made: it never migrates
 * nor writes, so a role that may only read opens it.
 */
export async function openPostgresCheckingStore(url: string, options: PostgresStoreOptions = {}): Promise<OpenCheckingStore> {
  const opened = await openPostgres(url, options, async ({ pool }) => {
    const state = await readSchemaState(pool);
    const refusal = readingRefusal(KNOWN_MIGRATIONS, state, currentBuild(), 'this DATABASE_URL');
    if (refusal !== undefined) throw new SchemaRefused(refusal);
  });
  return { ...checkingReads(opened.sql), onChange: (change) => opened.changes.listeners.push(change), close: opened.close };
}
