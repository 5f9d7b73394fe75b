import pg from 'pg';
import type { StoreChange } from '../store.js';
import { describeError, type Warn } from './connection.js';

/**
 * The channel the migrations' triggers NOTIFY: an app's id, 'revoked-tokens' for new single
 * revocations, or '*' for "anything may have changed".
 */
const CHANNEL = 'tessera_changes';
/** While notifications are not being received, caches are emptied this often instead. */
const FALLBACK_FLUSH_MS = 250;

/**
 * The LISTEN connection. It reconnects by itself, with backoff; while it is down, listeners are
 * told "everything may have changed" every 250 ms, so that caches do not outlive a change they
 * could not hear of.
 */
export class ChangeListener {
  readonly listeners: ((change: StoreChange) => void)[] = [];
  #client: pg.Client | undefined;
  #stopped = false;
  #fallback: NodeJS.Timeout | undefined;
  #retryDelayMs = 250;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly warn: Warn,
  ) {}

  /** Whether notifications are being received: connected, and not falling back to flushing. */
  get hearing(): boolean {
    return !this.#stopped && this.#client !== undefined && this.#fallback === undefined;
  }

  async start(): Promise<void> {
    await this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#fallback);
    this.#fallback = undefined;
    await this.#client?.end().catch(() => {});
  }

  #emit(change: StoreChange = 'anything'): void {
    for (const listener of this.listeners) listener(change);
  }

  async #connect(): Promise<void> {
    const client = new pg.Client(this.config);
    // The current client is the only one whose loss counts: 'error' and 'end' both fire for one
    // loss, and only the first may start a reconnection.
    this.#client = client;
    client.on('notification', (message) => {
      const payload = message.payload ?? '*';
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
    if (this.#fallback !== undefined) {
      this.warn('the database notification connection is back; caches follow changes again');
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
      this.warn(
        'lost the database notification connection; caches are emptied every 250 ms until it is back',
        error instanceof Error ? describeError(error) : error,
      );
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
