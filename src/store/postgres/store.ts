import type { Store } from '../store.js';
import { ChangeListener } from './change-listener.js';
import { openPool, type PostgresStoreOptions } from './connection.js';
import { migrate } from './migrations.js';
import { postgresRunner } from './runner.js';
import { sqlDeveloperStore } from '../sql/developers.js';
import { createFirstKey, sqlKeyStore } from '../sql/keys.js';
import { sqlOnceClaimStore } from '../sql/once-claims.js';
import { sqlAppStore } from '../sql/apps.js';
import { sqlEventStore } from '../sql/events.js';
import { sqlRevokedTokenStore } from '../sql/revoked-tokens.js';
import { sqlTokens } from '../sql/tokens.js';

export type { PostgresStoreOptions } from './connection.js';

/**
 * PostgreSQL, for several instances on one database. Every change that other instances must honour
 * (an app updated or deleted, tokens changed or removed) fires a trigger that NOTIFYs
 * `tessera_changes`; every instance LISTENs on a dedicated connection and empties its caches. If that
 * connection is lost, caches are emptied every 250 ms until it is back, so no instance serves a
 * stale grant for longer than that. When the database cannot be reached, operations fail with
 * `503 SERVICE_UNAVAILABLE` and `Retry-After`, and the pool reconnects by itself.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const warn = options.onWarning ?? (() => {});
  const { pool, clientConfig } = openPool(url, options, warn);
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }

  const sql = postgresRunner(pool);
  try {
    await createFirstKey(sql, Date.now());
  } catch (error) {
    await pool.end();
    throw error;
  }
  // Batches of tokens written at the same time: half the pool, the other half for everything else.
  const tokens = sqlTokens(sql, Math.max(1, Math.floor((options.poolSize ?? 10) / 2)));
  const changes = new ChangeListener(clientConfig, warn);
  await changes.start();

  let closed = false;
  return {
    backend: 'postgres',
    apps: sqlAppStore(sql),
    tokens: tokens.store,
    revokedTokens: sqlRevokedTokenStore(sql),
    keys: sqlKeyStore(sql),
    events: sqlEventStore(sql),
    developers: sqlDeveloperStore(sql),
    onceClaims: sqlOnceClaimStore(sql),
    onChange(listener) {
      changes.listeners.push(listener);
    },
    changeSignalUp: () => changes.hearing,
    onTokenBatch(listener) {
      tokens.onBatch(listener);
    },
    async ping() {
      await sql.get('SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      await tokens.drain();
      await changes.stop();
      await pool.end();
    },
  };
}
