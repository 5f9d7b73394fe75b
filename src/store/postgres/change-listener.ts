import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { StoreChange } from '../store.js';
import { describeError, type Warn } from './connection.js';

/**
 * The channel the migrations' triggers NOTIFY: an app's id, 'revoked-tokens' for new single
 * revocations, or '*' for "anything may have changed". Heartbeats (`heartbeat:ID`) go on it too.
 */
const CHANNEL = 'tessera_changes';
const HEARTBEAT_PREFIX = 'heartbeat:';
/** While notifications are not being received, caches are emptied this often instead. */
const FALLBACK_FLUSH_MS = 250;

export interface HeartbeatOptions {
  /** How often a heartbeat is sent through the pool, the path the triggers' notifications take. */
  intervalMs?: number;
  /** How long a heartbeat sent may go unheard before the LISTEN connection counts as deaf. */
  timeoutMs?: number;
}

/**
 * The LISTEN connection. It reconnects by itself, with backoff; while it is down, listeners are
 * told "everything may have changed" every 250 ms, so that caches do not outlive a change they
 * could not hear of.
 *
 * A connection that is up is not proof of hearing: a transaction pooler hands LISTEN to a server
 * connection that the next client gets, and a connection to another database hears nothing of this
 * one. So the listener proves itself: every second it NOTIFYs a heartbeat of its own through the
 * pool (`sendHeartbeat`), and only while each is heard back within the timeout does it count as
 * hearing. One that is not is treated as a lost connection (flushing every 250 ms, a warning, a new
 * connection), until a heartbeat is heard again.
 */
export class ChangeListener {
  readonly listeners: ((change: StoreChange) => void)[] = [];
  #client: pg.Client | undefined;
  #stopped = false;
  #fallback: NodeJS.Timeout | undefined;
  #retryDelayMs = 250;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  #heartbeats: NodeJS.Timeout | undefined;
  /** The heartbeat sent and not yet heard back. */
  #awaiting: { id: string; sentAt: number } | undefined;
  /** Resolves `start()` once the first heartbeat is heard, or its time is up. */
  #firstHeard: (() => void) | undefined;

  constructor(
    /** A new client for the LISTEN connection, to the database's primary (connection.ts). */
    private readonly newClient: () => pg.Client,
    private readonly warn: Warn,
    private readonly sendHeartbeat: (payload: string) => Promise<unknown>,
    options: HeartbeatOptions = {},
  ) {
    this.#intervalMs = options.intervalMs ?? 1_000;
    this.#timeoutMs = options.timeoutMs ?? 1_000;
  }

  /** Whether notifications are being received: connected, its heartbeats heard, not falling back to flushing. */
  get hearing(): boolean {
    return !this.#stopped && this.#client !== undefined && this.#fallback === undefined;
  }

  /** Connects and waits for the first heartbeat (at most the timeout); until it is heard, caches are flushed. */
  async start(): Promise<void> {
    this.#startFallback();
    const firstHeard = new Promise<void>((resolve) => (this.#firstHeard = resolve));
    await this.#connect();
    this.#heartbeats = setInterval(() => this.#beat(), this.#intervalMs);
    this.#heartbeats.unref();
    const timeUp = setTimeout(() => this.#firstHeard?.(), this.#timeoutMs);
    await firstHeard;
    clearTimeout(timeUp);
    if (this.#client !== undefined && !this.hearing) this.#deaf(this.#client);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#fallback);
    clearInterval(this.#heartbeats);
    this.#fallback = undefined;
    await this.#client?.end().catch(() => {});
  }

  #emit(change: StoreChange = 'anything'): void {
    for (const listener of this.listeners) listener(change);
  }

  async #connect(): Promise<void> {
    const client = this.newClient();
    // The current client is the only one whose loss counts: 'error' and 'end' both fire for one
    // loss, and only the first may start a reconnection.
    this.#client = client;
    client.on('notification', (message) => {
      const payload = message.payload ?? '*';
      if (payload.startsWith(HEARTBEAT_PREFIX)) return this.#heard(payload.slice(HEARTBEAT_PREFIX.length));
      this.#emit(payload === '*' ? 'anything' : payload === 'revoked-tokens' ? 'revocations' : { appId: payload });
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
    // Hearing again only once a heartbeat comes back on this connection.
    this.#awaiting = undefined;
    this.#beat();
  }

  /** Sends a heartbeat if none is awaited; counts the connection deaf if the one awaited is overdue. */
  #beat(): void {
    const client = this.#client;
    if (this.#stopped || client === undefined) return;
    if (this.#awaiting !== undefined) {
      if (Date.now() - this.#awaiting.sentAt >= this.#timeoutMs) this.#deaf(client);
      return;
    }
    const awaiting = { id: randomBytes(8).toString('hex'), sentAt: Date.now() };
    this.#awaiting = awaiting;
    // A heartbeat that cannot be sent (the database is away) says nothing about the listener.
    this.sendHeartbeat(`${HEARTBEAT_PREFIX}${awaiting.id}`).catch(() => {
      if (this.#awaiting === awaiting) this.#awaiting = undefined;
    });
  }

  #heard(id: string): void {
    if (this.#awaiting?.id !== id) return; // another instance's, or one given up on
    this.#awaiting = undefined;
    this.#firstHeard?.();
    this.#firstHeard = undefined;
    if (this.#fallback !== undefined) {
      clearInterval(this.#fallback);
      this.#fallback = undefined;
      if (this.#warnedLoss) this.warn('the database notification connection is back; caches follow changes again');
      this.#warnedLoss = false;
      this.#emit(); // whatever changed while nobody listened
    }
  }

  /** Whether a loss has been told, so that its end is told too (not the wait for the first heartbeat). */
  #warnedLoss = false;

  #deaf(client: pg.Client): void {
    this.#lost(
      client,
      new Error(
        `no heartbeat heard back within ${this.#timeoutMs} ms: the LISTEN connection hears nothing (a transaction pooler, another database?)`,
      ),
    );
  }

  #startFallback(): void {
    if (this.#fallback !== undefined) return;
    this.#emit();
    this.#fallback = setInterval(() => this.#emit(), FALLBACK_FLUSH_MS);
    this.#fallback.unref();
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (this.#stopped || client !== this.#client) return;
    this.#client = undefined;
    this.#awaiting = undefined;
    void client.end().catch(() => {});
    if (!this.#warnedLoss) {
      this.warn(
        'lost the database notification connection; caches are emptied every 250 ms until it is back',
        error instanceof Error ? describeError(error) : error,
      );
      this.#warnedLoss = true;
    }
    this.#startFallback();
    const delay = this.#retryDelayMs;
    this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, 5_000);
    setTimeout(() => {
      if (!this.#stopped) void this.#connect();
    }, delay).unref();
  }
}
