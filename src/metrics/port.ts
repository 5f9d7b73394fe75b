import type { EventLogMetrics } from '../events/log.js';
import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';
import { NO_CACHE_LOOKUPS, type CacheMetrics } from 'tessera-tokens/internal/metrics/cache-lookups.js';

export { NO_CACHE_LOOKUPS, type CacheLookups, type CacheMetrics, type CacheName } from 'tessera-tokens/internal/metrics/cache-lookups.js';

/**
 * What the services tell the metrics (METRICS_PORT), as calls with closed sets of arguments: no
 * label value ever comes from a client. The services know nothing of Prometheus; `NO_METRICS`, the
 * default (the CLI, tests, a server without METRICS_PORT), does nothing. The implementation
 * (`src/prometheus/metrics.ts`) adds to plain numbers, read when Prometheus scrapes: a call on a hot path costs
 * an increment, never a label lookup. The event log's calls are declared with it (`EventLogMetrics`).
 */
export interface Metrics extends EventLogMetrics, CacheMetrics, WebhookMetrics {
  /** Tokens revoked, one by one or `count` at a time (a revoke-all). */
  tokensRevoked(kind: PrincipalKind, count: number): void;
  /** An RFC 7662 answer. */
  introspected(active: boolean): void;
  forwardAuthDecided(decision: ForwardAuthDecision): void;
  /** A request refused with 429 by one of the limits. */
  rateLimited(limit: RateLimitName): void;
  /** A group commit: `size` items written in one transaction, in `seconds`. */
  batchWritten(writer: BatchWriter, size: number, seconds: number): void;
  /**
   * The HTTP request durations: present only with metrics on, so that without them the server
   * installs no hook at all.
   */
  readonly requestDurations?: RequestDurations;
}

export type DeliveryOutcome = 'delivered' | 'retried' | 'failed';

/** What the webhook sender tells the metrics (`tessera_webhook_deliveries_total`). */
export interface WebhookMetrics {
  webhookAttempted(outcome: DeliveryOutcome): void;
}

export type ForwardAuthDecision = 'allowed' | 'unauthenticated' | 'forbidden' | 'error';

export type RateLimitName =
  | 'token_requests_per_address'
  | 'admin_failures_per_address'
  | 'admin_failures_per_app'
  | 'attestation_failures_per_address'
  | 'sign_in'
  | 'app_creations'
  | 'invitations';

export type BatchWriter = 'tokens' | 'events';

/** The durations of the requests of one route, by method and status. */
export interface RouteDurations {
  observe(method: string, statusCode: number, seconds: number): void;
}

export interface RequestDurations {
  /** The series of one route template, made once, when the route is added. */
  route(template: string): RouteDurations;
  /** Requests that matched no route (404). */
  readonly unmatched: RouteDurations;
}

export const NO_METRICS: Metrics = Object.freeze({
  eventsCounted() {},
  tokensRevoked() {},
  introspected() {},
  forwardAuthDecided() {},
  rateLimited() {},
  cacheLookups: () => NO_CACHE_LOOKUPS,
  batchWritten() {},
  eventWriteFailed() {},
  eventsLost() {},
  webhookAttempted() {},
});
