import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { DEFAULT_STALE_LIMIT_MS, type ChangeSignal, type StoreChange } from '../checking.js';
import { describeError, type Warn } from './connection.js';

/**
 * The channel the migrations' triggers NOTIFY: an app's id, 'revoked-tokens' for new single
 * revocations, or '*' for "anything may have changed". Heartbeats (`heartbeat:ID`) go on it too.
 */
const CHANNEL = 'tessera_changes';
const HEARTBEAT_PREFIX = 'heartbeat:';
/** Once caches are no longer trusted, they are emptied this often (or at the stale limit, if shorter). */
const FALLBACK_FLUSH_MS = 250;

export interface ChangeListenerOptions {
  /**
   * PG_STALE_LIMIT_MS: the longest an instance serves what it cached after its last proof that it
   * hears every change; so, the longest an acknowledged change made elsewhere (a revocation, a
   * rotated secret, a deleted app) can go unenforced here, whatever happens to the database.
   */
  staleLimitMs?: number;
  /** How often a heartbeat is sent through the pool, the path the triggers' notifications take (tests). */
  intervalMs?: number;
  /** How long a heartbeat sent may go unheard before the LISTEN connection counts as deaf (tests). */
  timeoutMs?: number;
}

interface Heartbeat {
  id: string;
  sentAt: number;
  /** When its NOTIFY committed: from then on it should be heard. */
  deliveredAt?: number;
}

/**
 * The LISTEN connection, and the proof that it hears. It reconnects by itself, with backoff.
 *
 * A connection that is up is not proof of hearing: a transaction pooler hands LISTEN to a server
 * connection that the next client gets, and a connection to another database hears nothing of this
 * one. So the listener proves itself: every second it NOTIFYs a heartbeat of its own through the
 * pool (`sendHeartbeat`). PostgreSQL delivers notifications in commit order, so a heartbeat heard
 * back proves that every change committed before it was sent has been heard: that moment is
 * `provenAt`. One not heard within the timeout makes the connection count as deaf, and a new one
 * is made.
 *
 * What caches hold is trusted for `staleLimitMs` after the last proof, whatever the reason the
 * proofs stopped (a lost or deaf connection, a database that does not answer): so a short outage
 * is ridden through with what is in memory. Past that, listeners are told "everything may have
 * changed" at once and then every 250 ms, until a heartbeat is heard again.
 */
export class ChangeListener {
  readonly listeners: ((change: StoreChange) => void)[] = [];
  #client: pg.Client | undefined;
  #stopped = false;
  #retryDelayMs = 250;
  readonly #staleLimitMs: number;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  #heartbeats: NodeJS.Timeout | undefined;
  /** The heartbeat sent and not yet heard back; `deliveredAt` once its NOTIFY committed. */
  #awaiting: Heartbeat | undefined;
  /** When the last heartbeat heard back was sent: every change committed before it has been heard. */
  #provenAt: number | undefined;
  /** Whether the current connection has had a heartbeat heard: until then, what it missed is unknown. */
  #connectionProven = false;
  /** Why changes are not being heard, when they are not. */
  #problem: string | undefined = 'starting: no heartbeat heard yet';
  /** Fires when the last proof is `staleLimitMs` old: caches are no longer trusted. */
  #staleTimer: NodeJS.Timeout | undefined;
  /** While caches are not trusted: empties them every 250 ms. */
  #fallback: NodeJS.Timeout | undefined;
  /** Whether the current trouble has been logged, so that its end is logged too. */
  #warned = false;
  /** Resolves `start()` once the first heartbeat is heard, or its time is up. */
  #firstHeard: (() => void) | undefined;

  constructor(
    /** A new client for the LISTEN connection, to the database's primary (connection.ts). */
    private readonly newClient: () => pg.Client,
    private readonly warn: Warn,
    private readonly sendHeartbeat: (payload: string) => Promise<unknown>,
    options: ChangeListenerOptions = {},
  ) {
    this.#staleLimitMs = options.staleLimitMs ?? DEFAULT_STALE_LIMIT_MS;
    // Heartbeats come often enough that a healthy signal never lets the last proof age past the limit.
    this.#intervalMs = options.intervalMs ?? Math.min(1_000, Math.floor(this.#staleLimitMs / 2));
    this.#timeoutMs = options.timeoutMs ?? this.#intervalMs;
  }

  #listened = false;

  /**
   * Whether a LISTEN has succeeded since `start()`: a listener that is not `hearing` though it did
   * listen is deaf (a transaction pooler, another database), not merely unable to connect.
   */
  get listened(): boolean {
    return this.#listened;
  }

  /** Whether notifications are being received now, and until when caches are trusted. */
  get signal(): ChangeSignal {
    const trustedUntil = this.#provenAt === undefined ? 0 : this.#provenAt + this.#staleLimitMs;
    if (this.hearing) return { up: true, trustedUntil };
    return { up: false, problem: this.#stopped ? 'stopped' : this.#currentProblem(), trustedUntil };
  }

  /** Connected, and its last heartbeat was heard back within one interval and one timeout. */
  get hearing(): boolean {
    return (
      !this.#stopped &&
      this.#client !== undefined &&
      this.#connectionProven &&
      this.#provenAt !== undefined &&
      Date.now() - this.#provenAt <= this.#intervalMs + this.#timeoutMs
    );
  }

  /**
   * Connects and waits for the first heartbeat (at most the timeout); until it is heard, caches are
   * not trusted. Resolves whether it was heard.
   */
  async start(): Promise<boolean> {
    this.#distrust();
    const firstHeard = new Promise<void>((resolve) => (this.#firstHeard = resolve));
    await this.#connect();
    this.#heartbeats = setInterval(() => this.#beat(), this.#intervalMs);
    this.#heartbeats.unref();
    const timeUp = setTimeout(() => this.#firstHeard?.(), this.#timeoutMs);
    await firstHeard;
    clearTimeout(timeUp);
    const heard = this.#client !== undefined && this.#connectionProven;
    if (this.#client !== undefined && !heard) this.#deaf(this.#client);
    return heard;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#fallback);
    clearInterval(this.#heartbeats);
    clearTimeout(this.#staleTimer);
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
    this.#connectionProven = false;
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
    this.#listened = true;
    this.#retryDelayMs = 250;
    this.#awaiting = undefined;
    this.#beat();
  }

  /** Sends a heartbeat if none is awaited; counts the connection deaf if the one delivered is overdue. */
  #beat(): void {
    const client = this.#client;
    if (this.#stopped || client === undefined) return;
    const awaiting = this.#awaiting;
    if (awaiting !== undefined) {
      if (awaiting.deliveredAt !== undefined && Date.now() - awaiting.deliveredAt >= this.#timeoutMs) this.#deaf(client);
      return;
    }
    const sent: Heartbeat = { id: randomBytes(8).toString('hex'), sentAt: Date.now() };
    this.#awaiting = sent;
    this.sendHeartbeat(`${HEARTBEAT_PREFIX}${sent.id}`).then(
      () => {
        sent.deliveredAt = Date.now();
      },
      () => {
        // Not sent (the database does not answer): no proof either way about the listener. The
        // last proof ages meanwhile, and caches stop being trusted at the limit.
        if (this.#awaiting === sent) this.#awaiting = undefined;
        this.#problem = 'heartbeats cannot be sent: the database does not answer';
      },
    );
  }

  #heard(id: string): void {
    const awaiting = this.#awaiting;
    if (awaiting?.id !== id) return; // another instance's, or one given up on
    this.#awaiting = undefined;
    this.#provenAt = awaiting.sentAt;
    this.#problem = undefined;
    const caughtUp = !this.#connectionProven || this.#fallback !== undefined;
    this.#connectionProven = true;
    this.#trustUntilStale();
    this.#firstHeard?.();
    this.#firstHeard = undefined;
    if (this.#warned) this.warn('the database notification connection is back: it hears changes again, and caches follow them');
    this.#warned = false;
    // What changed while this connection was not yet listening, or while nothing was proven.
    if (caughtUp) this.#emit();
  }

  /** Caches are trusted until the last proof is `staleLimitMs` old. */
  #trustUntilStale(): void {
    clearInterval(this.#fallback);
    this.#fallback = undefined;
    clearTimeout(this.#staleTimer);
    this.#staleTimer = setTimeout(() => this.#distrust(), Math.max(0, this.#provenAt! + this.#staleLimitMs - Date.now()));
    this.#staleTimer.unref();
  }

  /** Caches are no longer trusted: emptied now, then every 250 ms, until a heartbeat is heard. */
  #distrust(): void {
    if (this.#stopped || this.#fallback !== undefined) return;
    if (this.#provenAt !== undefined && !this.#warned) {
      this.warn(
        `no proof for ${this.#staleLimitMs} ms (PG_STALE_LIMIT_MS) that changes made elsewhere are heard (${this.#currentProblem()}): caches are emptied every ${FALLBACK_FLUSH_MS} ms until they are`,
      );
      this.#warned = true;
    }
    this.#emit();
    this.#fallback = setInterval(() => this.#emit(), Math.min(FALLBACK_FLUSH_MS, this.#staleLimitMs));
    this.#fallback.unref();
  }

  #currentProblem(): string {
    if (this.#problem !== undefined) return this.#problem;
    if (this.#client === undefined) return 'the notification connection is lost';
    return `no heartbeat heard back for ${Date.now() - (this.#provenAt ?? 0)} ms`;
  }

  #deaf(client: pg.Client): void {
    this.#lost(
      client,
      new Error(
        `no heartbeat heard back within ${this.#timeoutMs} ms: the LISTEN connection hears nothing (a transaction pooler, another database?)`,
      ),
    );
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (this.#stopped || client !== this.#client) return;
    this.#client = undefined;
    this.#awaiting = undefined;
    this.#connectionProven = false;
    const reason = error instanceof Error ? error.message : 'the connection ended';
    this.#problem = `the notification connection is lost (${reason})`;
    void client.end().catch(() => {});
    if (!this.#warned) {
      const trusted = this.#fallback === undefined && this.#provenAt !== undefined;
      this.warn(
        trusted
          ? `lost the database notification connection; caches are trusted until ${this.#staleLimitMs} ms (PG_STALE_LIMIT_MS) after the last heartbeat heard, then emptied every ${FALLBACK_FLUSH_MS} ms until it is back`
          : `lost the database notification connection; caches are emptied every ${FALLBACK_FLUSH_MS} ms until it is back`,
        error instanceof Error ? describeError(error) : error,
      );
      this.#warned = true;
    }
    const delay = this.#retryDelayMs;
    this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, 5_000);
    setTimeout(() => {
      if (!this.#stopped) void this.#connect();
    }, delay).unref();
  }
}
