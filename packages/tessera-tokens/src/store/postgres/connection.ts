import pg from 'pg';
import { currentBuild } from '../../release.js';
import { parsePostgresUrl, type PostgresHost, type PostgresUrl, type TargetSessionAttrs } from './multi-host-url.js';

export interface PostgresStoreOptions {
  /** Connections in the pool (PG_POOL_SIZE). */
  poolSize?: number;
  /** How long to wait for a connection before answering 503 (PG_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** How long a statement may run before answering 503 (PG_QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /**
   * A connection straight to PostgreSQL (DATABASE_DIRECT_URL), for what a transaction pooler cannot
   * carry: the LISTEN connection and the migrations (with their advisory lock). When it is set, the
   * store's URL is taken to go through such a pooler, and statements there are sent unnamed.
   */
  directUrl?: string;
  /**
   * The longest what is cached is served after the last proof that every change made elsewhere is
   * heard (PG_STALE_LIMIT_MS): how long an outage is ridden through, and how long an acknowledged
   * revocation may go unenforced on an instance that cannot hear it.
   */
  staleLimitMs?: number;
  /**
   * How long opening the store keeps trying while the database cannot be reached (refused, lost,
   * timed out), before it fails with SERVICE_UNAVAILABLE: `tessera serve`'s PG_STARTUP_TIMEOUT_MS.
   * 0 (the default, and the CLI's): fails at once.
   */
  startupRetryMs?: number;
  /** Told about trouble the service survives (a lost notification connection, an idle client's error). */
  onWarning?: Warn;
  /**
   * Whether opening checks that the role may read and write the rows of every table (`tessera
   * serve`'s, `missingGrants`); not a verifier's, which only reads.
   */
  checkGrants?: boolean;
}

export type Warn = (message: string, error?: unknown) => void;

/**
 * The pool, and how to open a connection of one's own straight to PostgreSQL (the LISTEN connection,
 * the migrations'): through `directUrl` when there is one, else like the pool's, to the same host.
 */
export interface PostgresConnection {
  pool: pg.Pool;
  direct: PostgresConnector;
  /** Whether the pool's connections go through a transaction pooler (a `directUrl` was given). */
  pooled: boolean;
}

/** New connections to the database a URL names: to the host its `target_session_attrs` asks for, when it names several. */
export interface PostgresConnector {
  /** A client of one's own, not yet connected. */
  newClient(): pg.Client;
  /** A pool of one's own of at most `max` connections. */
  newPool(max: number): pg.Pool;
}

export function openPool(url: string, options: PostgresStoreOptions, warn: Warn): PostgresConnection {
  const queryTimeoutMs = options.queryTimeoutMs ?? 5_000;
  const settings = { application_name: `tessera/${currentBuild().version}`, connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000 };
  const main = connectionTo(url, 'DATABASE_URL', warn);
  const pool = new pg.Pool({
    ...main.config,
    ...settings,
    Client: main.Client,
    max: options.poolSize ?? 10,
    idleTimeoutMillis: 30_000,
    query_timeout: queryTimeoutMs,
    // A startup parameter PgBouncer refuses ("unsupported startup parameter"); through a pooler the
    // wait is bounded by query_timeout alone (docs/deployment.md, "Connection poolers").
    ...(options.directUrl === undefined ? { statement_timeout: queryTimeoutMs } : {}),
  });
  heedConnectionErrors(pool, warn);
  // Without a directUrl, the LISTEN connection follows the pool's choice of host.
  const direct = options.directUrl === undefined ? main : connectionTo(options.directUrl, 'DATABASE_DIRECT_URL', warn);
  return {
    pool,
    direct: {
      newClient: () => new direct.Client({ ...direct.config, ...settings }),
      newPool: (max) => new pg.Pool({ ...direct.config, ...settings, Client: direct.Client, max }),
    },
    pooled: options.directUrl !== undefined,
  };
}

/**
 * How pg connects to what `url` names: pg.Client itself for a URL with one host and nothing more
 * (as ever), else a MultiHostClient that finds the host (`multiHostClient`).
 */
export function connectionTo(url: string, setting: string, warn: Warn): { Client: typeof pg.Client; config: pg.ClientConfig } {
  const parsed = parsePostgresUrl(url, setting);
  if (!parsed.multiHost) return { Client: pg.Client, config: { connectionString: parsed.url } };
  return { Client: multiHostClient(parsed, setting, warn), config: { connectionString: parsed.url } };
}

/**
 * Hears the error of every connection of the pool for the whole of its life: idle in the pool,
 * checked out, inside a transaction. pg emits 'error' on a connection that breaks (terminated by
 * `pg_terminate_backend()` in a switchover, a database restart, a cut network), and the pool
 * listens only while the connection is idle: an error unheard ends the process. The statement in
 * progress, or the next one, fails too, which answers 503; the pool replaces the connection.
 */
export function heedConnectionErrors(pool: pg.Pool, warn: Warn): void {
  pool.on('connect', (client) => {
    // A terminated connection emits twice: PostgreSQL's message, then the closed socket.
    let told = false;
    client.on('error', (error) => {
      if (told) return;
      told = true;
      warn('a database connection failed; the pool opens another when needed', describeError(error));
    });
  });
  // The pool passes on an idle connection's error, which its own listener above has told.
  pool.on('error', () => {});
}

/** What to log of a connection's error: never the client pg attaches to it (its settings, its socket). */
export function describeError(error: Error & { code?: string }): { code: string | undefined; message: string } {
  return { code: error.code, message: error.message };
}

/** SQLSTATE read_only_sql_transaction: a write sent to a server that takes none (a standby, or `default_transaction_read_only`). */
const READ_ONLY_SQL_TRANSACTION = '25006';
/** SQLSTATE sqlclient_unable_to_establish_sqlconnection, which answers 503 (errors.ts): no host would do. */
const NO_HOST_FITS = '08001';
/** After a search found no host that fits, connections fail at once for this long instead of searching again. */
const SEARCH_AGAIN_AFTER_MS = 250;

/**
 * A pg.Client for a URL with several hosts (or `target_session_attrs`, `connect_timeout`), given to
 * pg.Pool as its `Client` and used for the LISTEN connection: pg itself reads one host only.
 *
 * All the clients of one URL share a `HostChoice`: the host they connect to while nothing says it is
 * wrong. A new client connects straight to it and checks its session (`target_session_attrs`). When
 * there is no chosen host (at start, or after a doubt), one search runs for all the clients waiting:
 * each host in the URL's order, as libpq tries them, gets a throwaway probe connection (a pg.Client
 * cannot connect twice, so the client itself must go only where a probe found the right kind of
 * server), and the first that fits is chosen. Each attempt is bounded by `connect_timeout` (else
 * PG_CONNECT_TIMEOUT_MS); a client waits for the search at most its own connection timeout, and the
 * search goes on behind it, so that the next client finds the host already chosen.
 *
 * What casts doubt on the chosen host: a client that cannot connect to it or finds the wrong kind
 * of session there, a connection to it lost (a switchover ends every session with 57P01), and a
 * write it refuses as read-only (25006: the server became a standby, or was fenced). The statement
 * that met the 25006 answers 503 (errors.ts) and its connection is destroyed by the pool, never
 * reused (runner.ts); the next connection searches again, and so follows a promotion without a proxy.
 */
function multiHostClient(target: PostgresUrl, setting: string, warn: Warn): typeof pg.Client {
  const choice = new HostChoice(target, setting, warn);
  return class MultiHostClient extends pg.Client {
    /** The host this client connected to (or is connecting to). */
    #host: PostgresHost | undefined;
    readonly #config: pg.ClientConfig;

    constructor(config: pg.ClientConfig = {}) {
      super(choice.attemptConfig(config));
      this.#config = config;
      this.on('error', (error: Error) => {
        if (this.#host !== undefined) choice.doubt(this.#host, `lost a connection (${describeError(error).message})`);
      });
      this.connection.on('errorMessage', (message: { code?: string }) => {
        if (message.code === READ_ONLY_SQL_TRANSACTION && this.#host !== undefined) {
          choice.doubt(this.#host, 'refused a write as read-only (25006)');
        }
      });
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | void {
      const connecting = this.#connectToChosenHost();
      if (callback === undefined) return connecting;
      const tell = callback as (error: Error | null, client?: pg.Client) => void;
      connecting.then(
        (client) => tell(null, client),
        (error: Error) => tell(error),
      );
    }

    async #connectToChosenHost(): Promise<pg.Client> {
      const host = await choice.choose(this.#config);
      this.#host = host;
      aim(this, host);
      try {
        await super.connect();
      } catch (error) {
        choice.doubt(host, `refused a connection (${describeError(error as Error).message})`);
        throw error;
      }
      let mismatch: string | undefined;
      try {
        mismatch = await sessionMismatch(this, target.targetSessionAttrs, choice.attemptMs(this.#config));
      } catch (error) {
        choice.doubt(host, `did not answer the session check (${describeError(error as Error).message})`);
        await this.end().catch(() => {});
        throw error;
      }
      if (mismatch !== undefined) {
        choice.doubt(host, `is ${mismatch}`);
        await this.end().catch(() => {});
        throw Object.assign(new Error(`${setting}: ${host.label} is ${mismatch}, not target_session_attrs=${target.targetSessionAttrs}`), {
          code: NO_HOST_FITS,
        });
      }
      return this;
    }
  };
}

/** The host the clients of one URL connect to, and the search for it. */
class HostChoice {
  #chosen: PostgresHost | undefined;
  /** The host chosen last, to tell the operator when connections move to another. */
  #previous: PostgresHost | undefined;
  #search: Promise<PostgresHost> | undefined;
  #lastFailure: { error: Error; at: number } | undefined;

  constructor(
    private readonly target: PostgresUrl,
    private readonly setting: string,
    private readonly warn: Warn,
  ) {
    // One host: nothing to choose; each connection still checks its session.
    if (target.hosts.length === 1) this.#chosen = target.hosts[0];
  }

  /** How long one host may take to accept a connection (and answer the check): `connect_timeout`, else the caller's wait. */
  attemptMs(config: pg.ClientConfig): number {
    return this.target.connectTimeoutMs ?? config.connectionTimeoutMillis ?? 0;
  }

  attemptConfig(config: pg.ClientConfig): pg.ClientConfig {
    return { ...config, connectionString: this.target.url, connectionTimeoutMillis: this.attemptMs(config) };
  }

  /** The chosen host, or the one the search (this one's, or one under way) finds, within the caller's wait. */
  async choose(config: pg.ClientConfig): Promise<PostgresHost> {
    if (this.#chosen !== undefined) return this.#chosen;
    if (this.#lastFailure !== undefined && Date.now() - this.#lastFailure.at < SEARCH_AGAIN_AFTER_MS) throw this.#lastFailure.error;
    this.#search ??= this.#searchHosts(config).finally(() => (this.#search = undefined));
    return withDeadline(this.#search, config.connectionTimeoutMillis ?? 0);
  }

  /** Something says `host` may no longer be the one: the next connection searches again. */
  doubt(host: PostgresHost, why: string): void {
    if (this.#chosen !== host || this.target.hosts.length === 1) return;
    this.#chosen = undefined;
    this.warn(`${this.setting}: the database host ${host.label} ${why}; new connections look for the host again`);
  }

  async #searchHosts(config: pg.ClientConfig): Promise<PostgresHost> {
    const refusals: string[] = [];
    for (const host of this.target.hosts) {
      const refusal = await this.#probe(host, config);
      if (refusal === undefined) {
        if (this.#previous !== undefined && this.#previous !== host) {
          this.warn(
            `${this.setting}: database connections now go to ${host.label} (target_session_attrs=${this.target.targetSessionAttrs})`,
          );
        }
        this.#chosen = this.#previous = host;
        this.#lastFailure = undefined;
        return host;
      }
      refusals.push(`${host.label} ${refusal}`);
    }
    const error = Object.assign(
      new Error(`${this.setting}: no host fits target_session_attrs=${this.target.targetSessionAttrs}: ${refusals.join('; ')}`),
      { code: NO_HOST_FITS },
    );
    this.#lastFailure = { error, at: Date.now() };
    throw error;
  }

  /** Why `host` will not do, or undefined if it will: a throwaway connection, ended at once. */
  async #probe(host: PostgresHost, config: pg.ClientConfig): Promise<string | undefined> {
    const probe = new pg.Client(this.attemptConfig(config));
    probe.on('error', () => {}); // its failure is the answer
    aim(probe, host);
    try {
      await probe.connect();
      const mismatch = await sessionMismatch(probe, this.target.targetSessionAttrs, this.attemptMs(config));
      return mismatch === undefined ? undefined : `is ${mismatch}`;
    } catch (error) {
      return `refused a connection (${describeError(error as Error).message})`;
    } finally {
      await probe.end().catch(() => {});
    }
  }
}

/** Points a client not yet connected at `host` (pg reads its host and port when it connects). */
function aim(client: pg.Client, host: PostgresHost): void {
  if (host.host === undefined || host.port === undefined) return; // the one host of the URL, as pg read it
  const aimed = client as unknown as { host: string; port: number; connectionParameters: { host: string; port: number } };
  aimed.host = aimed.connectionParameters.host = host.host;
  aimed.port = aimed.connectionParameters.port = host.port;
}

/** What is wrong with a connected client's session for `attrs` ("a standby", "read-only"), or undefined. */
async function sessionMismatch(client: pg.Client, attrs: TargetSessionAttrs, timeoutMs: number): Promise<string | undefined> {
  if (attrs === 'any') return undefined;
  const check = {
    text: "SELECT pg_catalog.pg_is_in_recovery() AS in_recovery, pg_catalog.current_setting('transaction_read_only') AS read_only",
    ...(timeoutMs > 0 ? { query_timeout: timeoutMs } : {}),
  };
  const { rows } = await client.query<{ in_recovery: boolean; read_only: string }>(check);
  if (rows[0]?.in_recovery === true) return 'a standby';
  if (attrs === 'read-write' && rows[0]?.read_only === 'on') return 'read-only';
  return undefined;
}

/** `promise`, or the error pg gives when a connection takes too long (503 in errors.ts), after `ms` (0: no bound). */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  if (ms <= 0) return promise;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout exceeded when trying to connect')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: Error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * A pool of one connection of its own for `tessera migrate`, to `url` as given (DATABASE_DIRECT_URL
 * when there is one): its application_name is not release 0.1.0's, whose sessions it ends.
 */
export function openMigrationPool(url: string, connectTimeoutMs: number): pg.Pool {
  const { Client, config } = connectionTo(url, 'DATABASE_URL', () => {});
  const pool = new pg.Pool({
    ...config,
    Client,
    application_name: `tessera/${currentBuild().version} migrate`,
    connectionTimeoutMillis: connectTimeoutMs,
    max: 1,
  });
  heedConnectionErrors(pool, () => {});
  return pool;
}
