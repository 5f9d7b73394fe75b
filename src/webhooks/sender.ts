import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { WebhookMetrics } from '../metrics/port.js';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { currentBuild } from 'tessera-tokens/internal/release.js';
import { cloudEventOf } from './cloud-event.js';
import type { DestinationPolicy } from './destination.js';
import { DELIVERY_TIMEOUT_MS, postDelivery, type PostResult } from './post.js';
import { nextAttemptAt } from './schedule.js';
import type { WebhookSecrets } from './service.js';
import { signWebhook } from './signature.js';
import type { AttemptOutcome, TakenDelivery, WebhookStore } from './store.js';
import { DELIVERIES_KEPT_MS, MAX_DELIVERIES_KEPT, MAX_PENDING_DELIVERIES } from './webhook.js';

export interface WebhookSenderOptions {
  policy: DestinationPolicy;
  clock: Clock;
  metrics?: WebhookMetrics;
  onWarning?: (message: string, error: unknown) => void;
  /** How often the store is asked for due deliveries (a delivery made on this instance is sent at once: `kick`). */
  pollMs?: number;
  /** Deliveries sent at once by this instance. */
  concurrency?: number;
  timeoutMs?: number;
}

/** How often the queues are kept bounded and old deliveries deleted. */
const UPKEEP_EVERY_MS = 60_000;
const UPKEEP_BATCH = 1_000;

/**
 * Sends the deliveries the database wrote with their events (docs/webhooks.md): every instance asks
 * for due ones every `pollMs` (and at once when told an event was written, `kick`), takes a few with
 * a lease, POSTs each as a signed CloudEvent, and records how it went: sent, tried again later
 * (`schedule.ts`), or failed for good. At least once: an instance killed between taking and
 * recording leaves the delivery to be taken again when its lease ends; receivers drop duplicates by
 * `webhook-id`.
 */
export class WebhookSender {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #lastUpkeep = 0;
  #failing = false;
  readonly #pollMs: number;
  readonly #concurrency: number;
  readonly #timeoutMs: number;
  readonly #warn: (message: string, error: unknown) => void;
  readonly #userAgent = `Tessera-Webhooks/${currentBuild().version}`;

  constructor(
    private readonly store: WebhookStore,
    private readonly secrets: WebhookSecrets,
    private readonly options: WebhookSenderOptions,
  ) {
    this.#pollMs = options.pollMs ?? 1_000;
    this.#concurrency = options.concurrency ?? 8;
    this.#timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.#warn = options.onWarning ?? (() => {});
  }

  start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    this.#timer = setInterval(() => this.kick(), this.#pollMs);
    this.#timer.unref();
    this.kick();
  }

  /** Sends what is due now, after the round under way if there is one. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.#rounds().finally(() => (this.#running = undefined));
  }

  /** Sends what is due, until nothing is; resolves when done (the tests, `kick`'s rounds). */
  async sendDue(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
    await this.#rounds();
  }

  /**
   * Stops asking. Attempts under way are not waited for, nor recorded once the store closes: their
   * leases end, and another instance (or this one, started again) sends them again.
   */
  stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    return Promise.resolve();
  }

  async #rounds(): Promise<void> {
    do {
      this.#again = false;
      let taken: TakenDelivery[];
      const now = this.options.clock.now();
      try {
        await this.#upkeep(now);
        // Taken for twice the attempt's timeout: past it, another instance may take it again.
        taken = await this.store.takeDue(now, now + 2 * this.#timeoutMs + 1_000, this.#concurrency);
        if (this.#failing) this.#failing = false;
      } catch (error) {
        // The database away is said by the store's own signals (readiness, tessera_store_up, the audit
        // events' warning); anything else once, until the store answers again. The next poll tries again.
        if (!this.#failing && !this.#stopped && !isServiceUnavailable(error)) {
          this.#failing = true;
          this.#warn('webhook deliveries cannot be read; they are tried again at the next poll', error);
        }
        return;
      }
      await Promise.all(taken.map((each) => this.#attempt(each)));
      if (taken.length === this.#concurrency) this.#again = true;
    } while (this.#again && !this.#stopped);
  }

  async #upkeep(now: number): Promise<void> {
    if (now - this.#lastUpkeep < UPKEEP_EVERY_MS) return;
    this.#lastUpkeep = now;
    const dropped = await this.store.failOverflow(MAX_PENDING_DELIVERIES, now);
    for (let i = 0; i < dropped; i++) this.options.metrics?.webhookAttempted('failed');
    await this.store.deleteEnded(now - DELIVERIES_KEPT_MS, MAX_DELIVERIES_KEPT, UPKEEP_BATCH);
  }

  async #attempt({ delivery, webhook }: TakenDelivery): Promise<void> {
    const attemptedAt = delivery.lastAttemptAt ?? this.options.clock.now();
    let result: PostResult;
    try {
      const body = JSON.stringify(cloudEventOf({ ...delivery.event, appId: delivery.appId }));
      const secrets = [this.secrets.open(webhook.id, webhook.secret)];
      if (webhook.previousSecret !== null && (webhook.previousSecretUntil ?? 0) > attemptedAt) {
        secrets.push(this.secrets.open(webhook.id, webhook.previousSecret));
      }
      const signed = signWebhook(`msg_${delivery.event.id}`, Math.floor(this.options.clock.now() / 1000), body, secrets);
      result = await postDelivery(
        webhook.url,
        { 'content-type': 'application/cloudevents+json; charset=utf-8', 'user-agent': this.#userAgent, ...signed },
        body,
        this.options.policy,
        this.#timeoutMs,
      );
    } catch (error) {
      result = { status: null, excerpt: null, error: error instanceof Error ? error.message : String(error) };
    }
    const endedAt = this.options.clock.now();
    const retryAt = result.error === null ? null : nextAttemptAt(delivery.attempts, endedAt);
    const outcome: AttemptOutcome = {
      state: result.error === null ? 'delivered' : retryAt === null ? 'failed' : 'pending',
      nextAttemptAt: retryAt ?? endedAt,
      lastStatus: result.status,
      lastError: result.error,
      lastResponse: result.excerpt,
    };
    try {
      if (!(await this.store.recordAttempt(delivery.id, delivery.attempts, attemptedAt, outcome))) return;
    } catch (error) {
      // Not recorded: the lease ends, and the delivery is tried again (a duplicate the receiver drops).
      if (!this.#stopped && !isServiceUnavailable(error)) {
        this.#warn(`the outcome of webhook delivery ${delivery.id} could not be recorded; it is sent again later`, error);
      }
      return;
    }
    this.options.metrics?.webhookAttempted(outcome.state === 'delivered' ? 'delivered' : outcome.state === 'failed' ? 'failed' : 'retried');
  }
}
