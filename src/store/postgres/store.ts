import { createFirstKey } from '../sql/keys.js';
import { sqlStore } from '../sql/store.js';
import type { Store } from '../store.js';
import { ChangeListener } from './change-listener.js';
import type pg from 'pg';
import { heedConnectionErrors, openPool, type PostgresConnector, type PostgresStoreOptions, type Warn } from './connection.js';
import { migrate } from './migrations.js';
import { postgresRunner } from './runner.js';

export type { PostgresStoreOptions } from './connection.js';

/**
 * PostgreSQL, for several instances on one database. Every change that other instances must honour
 * (an app updated or deleted, tokens changed or removed) fires a trigger that NOTIFYs
 * `tessera_changes`; every instance LISTENs on a dedicated connection and empties its caches. If that
 * connection is lost, caches are emptied every 250 ms until it is back, so no instance serves a
 * stale grant for longer than that. With `directUrl`, the pool may go through a transaction pooler
 * (PgBouncer's pool_mode = transaction), and the LISTEN connection and migrations go straight to
 * PostgreSQL. When the database cannot be reached, operations fail with
 * `503 SERVICE_UNAVAILABLE` and `Retry-After`, and the pool reconnects by itself.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const warn = options.onWarning ?? (() => {});
  const { pool, direct, pooled } = openPool(url, options, warn);
  const sql = postgresRunner(pool, { pooled });
  try {
    await migrateDirectly(pool, direct, pooled, warn);
    await createFirstKey(sql, Date.now());
  } catch (error) {
    await pool.end();
    throw error;
  }
  const changes = new ChangeListener(
    () => direct.newClient(),
    warn,
    (payload) => Promise.resolve(sql.get("SELECT pg_notify('tessera_changes', :payload)", { payload })),
    { staleLimitMs: options.staleLimitMs },
  );
  await changes.start();

  return sqlStore({
    backend: 'postgres',
    sql,
    // Half the pool, the other half for everything else.
    tokenBatchesInFlight: Math.max(1, Math.floor((options.poolSize ?? 10) / 2)),
    onChange: (listener) => changes.listeners.push(listener),
    changeSignal: () => changes.signal,
    async close() {
      await changes.stop();
      await pool.end();
    },
  });
}

/** Migrations take a session-level advisory lock, which a transaction pooler does not keep: they go direct. */
async function migrateDirectly(pool: pg.Pool, direct: PostgresConnector, pooled: boolean, warn: Warn): Promise<void> {
  if (!pooled) return migrate(pool);
  const directPool = direct.newPool(1);
  heedConnectionErrors(directPool, warn);
  try {
    await migrate(directPool);
  } finally {
    await directPool.end();
  }
}
