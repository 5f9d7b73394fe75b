import type { DeliveryRecord, DeliveryState, WebhookRecord } from './webhook.js';

/** A delivery taken to be sent (`WebhookStore.takeDue`), with what the attempt needs of its webhook. */
export interface TakenDelivery {
  delivery: DeliveryRecord;
  webhook: Pick<WebhookRecord, 'id' | 'url' | 'secret' | 'previousSecret' | 'previousSecretUntil'>;
}

/** How an attempt ended, recorded if the delivery is still the taker's (`WebhookStore.recordAttempt`). */
export interface AttemptOutcome {
  state: DeliveryState;
  /** When to try again (pending), or when it ended. */
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  lastResponse: string | null;
}

/**
 * The webhooks' storage seam; one SQL implementation over both dialects (`src/store/sql/webhooks.ts`).
 * Deliveries are written by the database with each event (migration 17's trigger), in the event's
 * transaction; this reads, takes, and records them.
 */
export interface WebhookStore {
  listOf(appId: string): Promise<WebhookRecord[]>;
  find(appId: string, webhookId: string): Promise<WebhookRecord | undefined>;
  countOf(appId: string): Promise<number>;
  insert(record: WebhookRecord): Promise<void>;
  /** True, or undefined when the app has no such webhook (nothing written). Its deliveries go with it. */
  delete(appId: string, webhookId: string): Promise<true | undefined>;
  /** Replaces the secret; the replaced one signs until `previousSecretUntil`. True, or undefined (no such webhook). */
  replaceSecret(
    appId: string,
    webhookId: string,
    secret: Buffer,
    previousSecret: Buffer,
    previousSecretUntil: number,
  ): Promise<true | undefined>;
  /** The webhook's deliveries, newest first, below `beforeId`. */
  listDeliveries(appId: string, webhookId: string, beforeId: number | undefined, limit: number): Promise<DeliveryRecord[]>;
  /**
   * Takes up to `limit` deliveries due at `now`, oldest due first: each gets one more attempt and is
   * not due again before `leaseUntil` (an instance that dies while sending leaves it to be taken
   * again then). On PostgreSQL, instances taking at once take different ones.
   */
  takeDue(now: number, leaseUntil: number, limit: number): Promise<TakenDelivery[]>;
  /**
   * Records an attempt's outcome, unless the delivery was taken again since (its lease ran out) or
   * sent again by hand: true when recorded.
   */
  recordAttempt(deliveryId: number, attempts: number, attemptedAt: number, outcome: AttemptOutcome): Promise<boolean>;
  /** Makes a delivery of the app's webhook due now, with its attempts counted from 0 again: true, or undefined (none such). */
  resend(appId: string, webhookId: string, deliveryId: number, now: number): Promise<true | undefined>;
  /** Marks failed, for each webhook, its oldest waiting deliveries past `keepPending`; how many. */
  failOverflow(keepPending: number, at: number): Promise<number>;
  /** Deletes ended deliveries older than `cutoff`, or past each webhook's newest `keep`; at most `batch`. */
  deleteEnded(cutoff: number, keep: number, batch: number): Promise<number>;
  /** The oldest waiting delivery's event instant (UNIX ms), and how many are overdue by more than `overdueBy` at `now`. */
  backlog(now: number, overdueBy: number): Promise<{ oldestPendingAt: number | null; overdue: number }>;
}
