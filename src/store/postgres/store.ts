import pg from 'pg';
import { DEFAULT_APP_CONFIGURATION, type AppConfiguration, type AppRecord } from '../../apps/app.js';
import { AppConflictError, type AppStore } from '../../apps/store.js';
import type { AuditEvent, NewAuditEvent } from '../../events/event.js';
import type { EventStore } from '../../events/store.js';
import { TesseraError } from '../../errors.js';
import type { PrincipalKind } from '../../principal.js';
import type { RevocationKind } from '../../tokens/revocation.js';
import type { TokenRecord, TokenStore } from '../../tokens/store.js';
import { GroupCommit } from '../group-commit.js';
import type { Store } from '../store.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';

interface EventRow {
  id: string;
  app_id: string;
  type: AuditEvent['type'];
  at: string;
  principal: AuditEvent['principal'];
  client_address: string | null;
  details: AuditEvent['details'];
}

export interface PostgresStoreOptions {
  /** Connections in the pool (PG_POOL_SIZE). */
  poolSize?: number;
  /** How long to wait for a connection before answering 503 (PG_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** How long a statement may run before answering 503 (PG_QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /** Told about trouble the service survives (a lost notification connection, an idle client's error). */
  onWarning?: (message: string, error?: unknown) => void;
}

const CHANNEL = 'tessera_changes';
/** Key of the advisory lock that serializes migrations across instances starting together. */
const MIGRATION_LOCK = 7_246_135_001;
/** While notifications are not being received, caches are emptied this often instead. */
const FALLBACK_FLUSH_MS = 250;

interface AppRow {
  app_id: string;
  name: string;
  app_key: string;
  client_id: string;
  client_secret_hash: Buffer;
  admin_id: string;
  created_at: string;
  configuration: Partial<AppConfiguration>;
}

interface TokenRow {
  verifier_hash: Buffer;
  app_id: string;
  kind: PrincipalKind;
  issued_at: string;
  expires_at: string | null;
}

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
  const queryTimeoutMs = options.queryTimeoutMs ?? 5_000;
  const connectionConfig = { connectionString: url, application_name: 'tessera', connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000 };
  const pool = new pg.Pool({
    ...connectionConfig,
    max: options.poolSize ?? 10,
    idleTimeoutMillis: 30_000,
    query_timeout: queryTimeoutMs,
    statement_timeout: queryTimeoutMs,
  });
  // An idle connection that breaks (a database restart) must not crash the process.
  pool.on('error', (error) => warn('an idle database connection failed', error));

  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }

  const transaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw unavailableOr(error);
    }
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw unavailableOr(error);
    } finally {
      client.release();
    }
  };

  const query = async <R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> => {
    try {
      return await pool.query<R>(config);
    } catch (error) {
      throw unavailableOr(error);
    }
  };

  // An operator's or admin's change writes its audit events on the change's own connection,
  // before the COMMIT: both are written, or neither.
  const insertEvents = async (client: pg.PoolClient, batch: NewAuditEvent[]) => {
    if (batch.length > 0) await client.query(insertEventsQuery(batch));
  };
  const deleteTokensOfApp = async (client: pg.PoolClient, appId: string, kind: RevocationKind): Promise<number> => {
    const result =
      kind === 'all'
        ? await client.query('DELETE FROM tokens WHERE app_id = $1', [appId])
        : await client.query('DELETE FROM tokens WHERE app_id = $1 AND kind = $2', [appId, kind]);
    return result.rowCount ?? 0;
  };

  const apps: AppStore = {
    async insert(app) {
      try {
        await query({
          name: 'tessera-insert-app',
          text: `INSERT INTO apps (app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          values: [app.appId, app.name, app.appKey, app.clientId, app.clientSecretHash, app.adminId, app.createdAt, JSON.stringify(app.configuration)],
        });
      } catch (error) {
        if ((error as { code?: string }).code === '23505') throw new AppConflictError();
        throw error;
      }
    },
    async findById(appId) {
      const result = await query<AppRow>({ name: 'tessera-find-app', text: 'SELECT * FROM apps WHERE app_id = $1', values: [appId] });
      const row = result.rows[0];
      return row === undefined ? undefined : toApp(row);
    },
    async list() {
      const result = await query<AppRow>({ text: 'SELECT * FROM apps ORDER BY created_at, app_id' });
      return result.rows.map(toApp);
    },
    async count() {
      const result = await query<{ n: string }>({ text: 'SELECT count(*) AS n FROM apps' });
      return Number(result.rows[0]?.n ?? 0);
    },
    async rotateClientSecret(appId, hash, { revokeAdminTokens }, audit) {
      return transaction(async (client) => {
        const updated = await client.query('UPDATE apps SET client_secret_hash = $2 WHERE app_id = $1', [appId, hash]);
        if ((updated.rowCount ?? 0) === 0) return undefined;
        const rotation = { adminTokensRevoked: revokeAdminTokens ? await deleteTokensOfApp(client, appId, 'admin') : 0 };
        await insertEvents(client, audit(rotation));
        return rotation;
      });
    },
    async updateConfiguration(appId, changes, audit) {
      return transaction(async (client) => {
        const result = await client.query<AppRow>({
          name: 'tessera-update-configuration',
          text: 'UPDATE apps SET configuration = configuration || $2::jsonb WHERE app_id = $1 RETURNING *',
          values: [appId, JSON.stringify(changes)],
        });
        const row = result.rows[0];
        if (row === undefined) return undefined;
        const updated = toApp(row);
        await insertEvents(client, audit(updated));
        return updated;
      });
    },
    async delete(appId) {
      return transaction(async (client) => {
        await client.query('DELETE FROM tokens WHERE app_id = $1', [appId]);
        await client.query('DELETE FROM events WHERE app_id = $1', [appId]);
        const result = await client.query('DELETE FROM apps WHERE app_id = $1', [appId]);
        return (result.rowCount ?? 0) > 0;
      });
    },
  };

  // One round trip and one commit for every batch of tokens (group commit); with PostgreSQL's
  // default synchronous_commit, a token is durable when its request is answered.
  const tokenWriter = new GroupCommit<TokenRecord>({
    writeBatch: async (batch) => {
      await query({
        name: 'tessera-insert-tokens',
        text: `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
               SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])`,
        values: [
          batch.map((token) => token.selector),
          batch.map((token) => token.verifierHash),
          batch.map((token) => token.appId),
          batch.map((token) => token.kind),
          batch.map((token) => token.issuedAt),
          batch.map((token) => token.expiresAt),
        ],
      });
    },
    writeOne: async (token) => {
      await query({
        name: 'tessera-insert-token',
        text: `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
        values: [token.selector, token.verifierHash, token.appId, token.kind, token.issuedAt, token.expiresAt],
      });
    },
    failsEverything: (error) => error instanceof TesseraError && error.code === 'SERVICE_UNAVAILABLE',
    maxInFlight: Math.max(1, Math.floor((options.poolSize ?? 10) / 2)),
  });

  const tokens: TokenStore = {
    insert(token) {
      return tokenWriter.add(token);
    },
    async findBySelector(selector) {
      const result = await query<TokenRow>({
        name: 'tessera-find-token',
        text: 'SELECT verifier_hash, app_id, kind, issued_at, expires_at FROM tokens WHERE selector = $1',
        values: [selector],
      });
      const row = result.rows[0];
      if (row === undefined) return undefined;
      return {
        selector,
        verifierHash: row.verifier_hash,
        appId: row.app_id,
        kind: row.kind,
        issuedAt: Number(row.issued_at),
        expiresAt: row.expires_at === null ? null : Number(row.expires_at),
      };
    },
    async delete(selector) {
      const result = await query({ name: 'tessera-delete-token', text: 'DELETE FROM tokens WHERE selector = $1', values: [selector] });
      return (result.rowCount ?? 0) > 0;
    },
    async deleteByApp(appId, kind, audit) {
      return transaction(async (client) => {
        const count = await deleteTokensOfApp(client, appId, kind);
        await insertEvents(client, audit(count));
        return count;
      });
    },
    async deleteExpired(now, batch) {
      return transaction(async (client) => {
        await client.query("SET LOCAL tessera.quiet = 'on'");
        const result = await client.query(
          `DELETE FROM tokens WHERE selector IN
             (SELECT selector FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [now, batch],
        );
        return result.rowCount ?? 0;
      });
    },
  };

  const events: EventStore = {
    async append(batch) {
      await query(insertEventsQuery(batch));
    },
    async list({ appId, type, beforeId, afterId, limit }) {
      const result =
        afterId === undefined
          ? await query<EventRow>({
              name: 'tessera-list-events',
              text: `SELECT * FROM events WHERE app_id = $1 AND ($2::text IS NULL OR type = $2) AND id < $3
                     ORDER BY id DESC LIMIT $4`,
              values: [appId, type ?? null, beforeId ?? Number.MAX_SAFE_INTEGER, limit],
            })
          : await query<EventRow>({
              name: 'tessera-list-events-after',
              text: `SELECT * FROM events WHERE app_id = $1 AND ($2::text IS NULL OR type = $2) AND id > $3
                     ORDER BY id LIMIT $4`,
              values: [appId, type ?? null, afterId, limit],
            });
      return result.rows.map(toEvent);
    },
    async trimApp(appId, keep, batch) {
      const result = await query({
        text: `DELETE FROM events WHERE id IN
                 (SELECT id FROM events WHERE app_id = $1 AND id <=
                    (SELECT id FROM events WHERE app_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)
                  ORDER BY id LIMIT $3)`,
        values: [appId, keep, batch],
      });
      return result.rowCount ?? 0;
    },
    async deleteOlderThan(cutoff, batch) {
      const result = await query({
        text: 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < $1 ORDER BY id LIMIT $2)',
        values: [cutoff, batch],
      });
      return result.rowCount ?? 0;
    },
  };

  const changes = new ChangeListener(connectionConfig, warn);
  await changes.start();

  let closed = false;
  return {
    backend: 'postgres',
    apps,
    tokens,
    events,
    onChange(listener) {
      changes.listeners.push(listener);
    },
    async ping() {
      await query({ text: 'SELECT 1' });
    },
    async close() {
      if (closed) return;
      closed = true;
      await tokenWriter.drain();
      await changes.stop();
      await pool.end();
    },
  };
}

/**
 * The LISTEN connection. It reconnects by itself, with backoff; while it is down, listeners are
 * told "everything may have changed" every 250 ms, so that caches do not outlive a change they
 * could not hear of.
 */
class ChangeListener {
  readonly listeners: ((appId?: string) => void)[] = [];
  #client: pg.Client | undefined;
  #stopped = false;
  #fallback: NodeJS.Timeout | undefined;
  #retryDelayMs = 250;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly warn: (message: string, error?: unknown) => void,
  ) {}

  async start(): Promise<void> {
    await this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#fallback);
    this.#fallback = undefined;
    await this.#client?.end().catch(() => {});
  }

  #emit(appId?: string): void {
    for (const listener of this.listeners) listener(appId);
  }

  async #connect(): Promise<void> {
    const client = new pg.Client(this.config);
    // The current client is the only one whose loss counts: 'error' and 'end' both fire for one
    // loss, and only the first may start a reconnection.
    this.#client = client;
    client.on('notification', (message) => {
      const payload = message.payload ?? '*';
      this.#emit(payload === '*' ? undefined : payload);
    });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      this.#lost(client, error);
      await client.end().catch(() => {});
      return;
    }
    if (this.#client !== client) return; // lost meanwhile
    this.#retryDelayMs = 250;
    if (this.#fallback !== undefined) {
      clearInterval(this.#fallback);
      this.#fallback = undefined;
      this.#emit(); // whatever changed while nobody listened
    }
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (this.#stopped || client !== this.#client) return;
    this.#client = undefined;
    void client.end().catch(() => {});
    if (this.#fallback === undefined) {
      this.warn('lost the database notification connection; caches are emptied every 250 ms until it is back', error);
      this.#emit();
      this.#fallback = setInterval(() => this.#emit(), FALLBACK_FLUSH_MS);
      this.#fallback.unref();
    }
    const delay = this.#retryDelayMs;
    this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, 5_000);
    setTimeout(() => {
      if (!this.#stopped) void this.#connect();
    }, delay).unref();
  }
}

async function migrate(pool: pg.Pool): Promise<void> {
  // Up to date already: nothing to write, so a role that may only read (another service's
  // TesseraVerifier) can open the store.
  const applied = await pool
    .query<{ version: number }>('SELECT version FROM schema_migrations')
    .then((result) => new Set(result.rows.map((row) => row.version)))
    .catch(() => new Set<number>());
  if (POSTGRES_MIGRATIONS.every((migration) => applied.has(migration.version))) return;

  const client = await pool.connect();
  try {
    // Instances starting together take turns; each step is applied once, in its own transaction.
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
    const applied = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [migration.version, Date.now()]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}

/** A batch of events in one statement. */
function insertEventsQuery(batch: NewAuditEvent[]): pg.QueryConfig {
  return {
    name: 'tessera-insert-events',
    text: `INSERT INTO events (app_id, type, at, principal, client_address, details)
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::jsonb[])`,
    values: [
      batch.map((event) => event.appId),
      batch.map((event) => event.type),
      batch.map((event) => event.at),
      batch.map((event) => event.principal),
      batch.map((event) => event.clientAddress),
      batch.map((event) => JSON.stringify(event.details)),
    ],
  };
}

function toApp(row: AppRow): AppRecord {
  return {
    appId: row.app_id,
    name: row.name,
    appKey: row.app_key,
    clientId: row.client_id,
    clientSecretHash: row.client_secret_hash,
    adminId: row.admin_id,
    createdAt: Number(row.created_at),
    configuration: { ...DEFAULT_APP_CONFIGURATION, ...row.configuration },
  };
}

function toEvent(row: EventRow): AuditEvent {
  return {
    id: Number(row.id),
    appId: row.app_id,
    type: row.type,
    at: Number(row.at),
    principal: row.principal,
    clientAddress: row.client_address,
    details: row.details,
  };
}

/** Errors that mean "the database cannot be reached now" (class 08, shutdown, a dropped database, timeouts, sockets). */
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300', '3D000', '08000', '08001', '08003', '08004', '08006', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error|Connection closed|not queryable/i;

function unavailableOr(error: unknown): unknown {
  if (error instanceof TesseraError) return error;
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : '';
  if ((code !== undefined && UNAVAILABLE_CODES.has(code)) || UNAVAILABLE_MESSAGES.test(message) || code === '57014') {
    return new TesseraError('SERVICE_UNAVAILABLE', 'The service cannot reach its database right now; try again shortly.', {
      retryAfterSeconds: 2,
    });
  }
  return error;
}
