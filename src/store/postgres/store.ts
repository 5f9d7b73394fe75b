import type pg from 'pg';
import { createFirstKey } from '../sql/signing-keys.js';
import { sqlStore } from '../sql/store.js';
import { readUpgradeState } from '../sql/upgrade.js';
import type { Store } from '../store.js';
import type { UpgradeState } from '../../upgrade/store.js';
import {
  heedConnectionErrors,
  type PostgresConnector,
  type PostgresStoreOptions,
  type Warn,
} from 'tessera-tokens/internal/store/postgres/connection.js';
import { missingGrants } from './grants.js';
import { migrate } from './migrations.js';
import { openPostgres } from 'tessera-tokens/internal/store/postgres/open.js';

export type { PostgresStoreOptions } from 'tessera-tokens/internal/store/postgres/connection.js';

/**
 * PostgreSQL, for several instances on one database. Every change that other instances must honour
 * (an app updated or deleted, tokens changed or removed) fires a trigger that NOTIFYs
 * `tessera_changes`; every instance LISTENs on a dedicated connection and empties its caches. If that
 * connection is lost, caches are emptied every 250 ms until it is back, so no instance serves a
 * stale grant for longer than that. With `directUrl`, the pool may go through a transaction pooler
 * (PgBouncer's pool_mode = transaction), and the LISTEN connection and migrations go straight to
 * PostgreSQL. When the database cannot be reached, operations fail with
 * `503 SERVICE_UNAVAILABLE` and `Retry-After`, and the pool reconnects by itself.
 *
 * Opening fails with `SERVICE_UNAVAILABLE` while the database cannot be reached, after trying again
 * for `startupRetryMs`; and with a plain error, at once, when `url` goes through a transaction
 * pooler without `directUrl` (its LISTEN hears nothing, named statements fail). Either way, nothing
 * it opened is left open.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  let upgradeState: UpgradeState | undefined;
  const opened = await openPostgres(url, options, async ({ pool, direct, pooled, sql, warn }) => {
    await migrateDirectly(pool, direct, pooled, warn);
    if (options.checkGrants === true) {
      const missing = await missingGrants(sql);
      if (missing !== undefined) throw missing;
    }
    await createFirstKey(sql, Date.now());
    upgradeState = await readUpgradeState(sql);
  });
  return sqlStore({
    backend: 'postgres',
    sql: opened.sql,
    upgradeState,
    // Half the pool, the other half for everything else.
    tokenBatchesInFlight: Math.max(1, Math.floor((options.poolSize ?? 10) / 2)),
    onChange: (change) => opened.changes.listeners.push(change),
    changeSignal: () => opened.changes.signal,
    close: opened.close,
  });
}

/**
 * With a direct URL, migrations go straight to PostgreSQL as the LISTEN connection does (their lock
 * is transaction-level, so a transaction pooler would carry them too: `store copy` relies on it).
 */
async function migrateDirectly(pool: pg.Pool, direct: PostgresConnector, pooled: boolean, warn: Warn): Promise<void> {
  const options = { onWaiting: (message: string) => warn(message), onNotice: (message: string) => warn(message) };
  if (!pooled) {
    await migrate(pool, options);
    return;
  }
  const directPool = direct.newPool(1);
  heedConnectionErrors(directPool, warn);
  try {
    await migrate(directPool, options);
  } finally {
    await directPool.end();
  }
}
