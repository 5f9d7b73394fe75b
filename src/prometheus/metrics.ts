import { ATTESTATION_REASONS, isAttestationReason } from '../attestation/outcome.js';
import type { BuildInfo } from 'tessera-tokens/internal/release.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EventType } from '../events/event.js';
import type { LossReason, LostPart } from '../events/log.js';
import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';
import type { Actor } from '../request-context.js';
import type { Store } from '../store/store.js';
import { instrumentStore, type StoreOperation } from './instrumented-store.js';
import type {
  BatchWriter,
  DeliveryOutcome,
  CacheLookups,
  CacheName,
  ForwardAuthDecision,
  Metrics,
  RateLimitName,
  RequestDurations,
  RouteDurations,
} from '../metrics/port.js';
import { BATCH_SIZE_BUCKETS, CountSeries, DURATION_BUCKETS, HistogramSeries, RouteSeries } from './series.js';

/** How long `tessera_store_up`'s ping may take at a scrape before the store counts as down. */
const STORE_PING_TIMEOUT_MS = 1_000;

const KINDS: readonly PrincipalKind[] = ['admin', 'anonymous'];
const DECISIONS: readonly ForwardAuthDecision[] = ['allowed', 'unauthenticated', 'forbidden', 'error'];
const LIMITS: readonly RateLimitName[] = [
  'token_requests_per_address',
  'admin_failures_per_address',
  'admin_failures_per_app',
  'attestation_failures_per_address',
  'sign_in',
  'app_creations',
  'invitations',
];
const WRITERS: readonly BatchWriter[] = ['tokens', 'events'];
const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ['delivered', 'retried', 'failed'];
/** A waiting delivery this late is overdue: no instance is sending (`tessera_webhook_deliveries_overdue`). */
const DELIVERY_OVERDUE_MS = 60_000;
const LOST_PARTS: readonly LostPart[] = ['events', 'counts'];
const LOSS_REASONS: readonly LossReason[] = ['refused', 'buffer_full', 'stopped'];
/** The refusals the services record, shown as 0 from the start (others appear when they happen). */
const KNOWN_REFUSALS: readonly (readonly [reason: string, kind: string])[] = [
  ['invalid_client', 'admin'],
  ['invalid_client', 'anonymous'],
  ['invalid_token', 'none'],
];

/**
 * The Prometheus side of the metrics (METRICS_PORT): implements the services' `Metrics` with plain
 * numbers (`series.ts`), and a prom-client `Registry` that reads them when scraped. Loaded only
 * with metrics on (`load.ts`): nothing else imports prom-client.
 */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  readonly requestDurations: RequestDurations;

  readonly #issued = seriesOf(KINDS, (kind) => ({ kind }));
  readonly #revoked = seriesOf(KINDS, (kind) => ({ kind }));
  readonly #refusals = new Map<string, CountSeries>();
  readonly #attestations = new Map(
    ATTESTATION_REASONS.flatMap((reason) =>
      (['issued', 'refused'] as const).map((answer) => [`${reason} ${answer}`, new CountSeries({ outcome: reason, answer })] as const),
    ),
  );
  readonly #introspections = seriesOf(['true', 'false'], (active) => ({ active }));
  readonly #decisions = seriesOf(DECISIONS, (decision) => ({ decision }));
  readonly #rateLimited = seriesOf(LIMITS, (limit) => ({ limit }));
  readonly #caches: CountSeries[] = [];
  readonly #batchSizes = new Map(WRITERS.map((writer) => [writer, new HistogramSeries({ writer }, BATCH_SIZE_BUCKETS)]));
  readonly #batchDurations = new Map(WRITERS.map((writer) => [writer, new HistogramSeries({ writer }, DURATION_BUCKETS)]));
  readonly #eventWriteFailures = new CountSeries({});
  readonly #eventsLost = new Map(
    LOST_PARTS.flatMap((part) => LOSS_REASONS.map((reason) => [`${part} ${reason}`, new CountSeries({ part, reason })] as const)),
  );
  readonly #webhookAttempts = seriesOf(DELIVERY_OUTCOMES, (outcome) => ({ outcome }));
  readonly #routes = new Map<string, RouteSeries>();
  #storeOperations: StoreOperation[] = [];
  #unwrittenEvents: () => number = () => 0;

  constructor(build: BuildInfo) {
    const registry = this.registry;
    collectDefaultMetrics({ register: registry });
    for (const [reason, kind] of KNOWN_REFUSALS) this.#refusal(reason, kind);

    // One `RouteSeries` per template, however many routes share it (GET and its HEAD, a `405` route
    // for the other methods): two would write the same series twice, and Prometheus would refuse
    // the scrape.
    const routeOf = (template: string): RouteSeries => {
      let route = this.#routes.get(template);
      if (route === undefined) {
        route = new RouteSeries(template);
        this.#routes.set(template, route);
      }
      return route;
    };
    this.requestDurations = {
      route: (template): RouteDurations => routeOf(template),
      unmatched: routeOf('unmatched'),
    };

    collectedHistogram(
      registry,
      'tessera_http_request_duration_seconds',
      'HTTP requests of the API listener, from arrival to answer, by route template, method and status class.',
      ['route', 'method', 'status_class'],
      () => [...this.#routes.values()].flatMap((route) => [...route.series()]),
    );
    collectedCounter(registry, 'tessera_tokens_issued_total', 'Tokens issued, by kind.', ['kind'], () => this.#issued.values());
    collectedCounter(
      registry,
      'tessera_anonymous_attestations_total',
      "Anonymous token requests of the apps whose anonymousAttestation is monitor or enforce, by the attestation's outcome (attested_<provider>, attestation_missing, attestation_invalid, attestation_replayed) and answer (issued, or refused by enforce).",
      ['outcome', 'answer'],
      () => this.#attestations.values(),
    );
    collectedCounter(
      registry,
      'tessera_token_refusals_total',
      'Requests refused for bad credentials (token.refused events), by reason and kind.',
      ['reason', 'kind'],
      () => this.#refusals.values(),
    );
    collectedCounter(
      registry,
      'tessera_tokens_revoked_total',
      'Tokens revoked, one by one or all of an app at once, by kind.',
      ['kind'],
      () => this.#revoked.values(),
    );
    collectedCounter(
      registry,
      'tessera_introspections_total',
      'RFC 7662 introspection answers, by whether the token was active.',
      ['active'],
      () => this.#introspections.values(),
    );
    collectedCounter(
      registry,
      'tessera_forward_auth_decisions_total',
      'Forward-authentication answers: allowed (200), unauthenticated (401), forbidden (403), error (other).',
      ['decision'],
      () => this.#decisions.values(),
    );
    collectedCounter(registry, 'tessera_rate_limited_total', 'Requests refused with 429, by limit.', ['limit'], () =>
      this.#rateLimited.values(),
    );
    collectedCounter(
      registry,
      'tessera_cache_lookups_total',
      'In-process cache lookups, by cache and result.',
      ['cache', 'result'],
      () => this.#caches,
    );
    collectedHistogram(
      registry,
      'tessera_group_commit_batch_size',
      'Items written per group-commit transaction, by writer.',
      ['writer'],
      () => this.#batchSizes.values(),
      true,
    );
    collectedHistogram(
      registry,
      'tessera_group_commit_duration_seconds',
      'Time to write one group-commit batch, by writer.',
      ['writer'],
      () => this.#batchDurations.values(),
      true,
    );
    collectedHistogram(registry, 'tessera_store_operation_duration_seconds', 'Store calls, by operation.', ['operation'], () =>
      this.#storeOperations.map((operation) => operation.durations),
    );
    // An operation's errors are shown once it has been called.
    collectedCounter(registry, 'tessera_store_errors_total', 'Store calls that failed, by operation.', ['operation'], () =>
      this.#storeOperations
        .filter((operation) => operation.durations.count > 0 || operation.errors.value > 0)
        .map((operation) => operation.errors),
    );
    collectedCounter(
      registry,
      'tessera_event_write_failures_total',
      'Writes of audit events (or of their counts) that failed, whether tried again or given up.',
      [],
      () => [this.#eventWriteFailures],
    );
    collectedCounter(
      registry,
      'tessera_events_lost_total',
      'Audit events given up: their rows (part="events") or their counts (part="counts"), by reason.',
      ['part', 'reason'],
      () => this.#eventsLost.values(),
    );
    collectedCounter(
      registry,
      'tessera_webhook_deliveries_total',
      'Attempts to send webhook deliveries, by outcome: delivered, retried (failed, to be tried again), failed (given up).',
      ['outcome'],
      () => this.#webhookAttempts.values(),
    );
    const unwritten = () => this.#unwrittenEvents();
    new Gauge({
      name: 'tessera_event_buffer_events',
      help: 'Audit events recorded but not yet written.',
      registers: [registry],
      collect() {
        this.set(unwritten());
      },
    });
    new Gauge({
      name: 'tessera_build_info',
      help: 'The running build: its release, the commit it was built from, and the schema version it writes.',
      labelNames: ['version', 'commit', 'schema_version'],
      registers: [registry],
    }).set({ version: build.version, commit: build.commit, schema_version: String(build.schemaVersion) }, 1);
  }

  /**
   * The store, with its calls timed; its state (`tessera_store_up`, pinged at each scrape, and
   * `tessera_change_signal_up`) and its batches of tokens are read from it.
   */
  instrument(store: Store): Store {
    const instrumented = instrumentStore(store);
    this.#storeOperations = instrumented.operations;
    store.onTokenBatch((size, seconds) => this.batchWritten('tokens', size, seconds));
    const backend = store.backend;
    new Gauge({
      name: 'tessera_store_up',
      help: 'Whether the store answered a ping at scrape time (within 1 s).',
      labelNames: ['backend'],
      registers: [this.registry],
      async collect() {
        this.set({ backend }, (await answers(store)) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'tessera_change_signal_up',
      help: "Whether other instances' changes are being heard (PostgreSQL LISTEN connected; always 1 for SQLite).",
      labelNames: ['backend'],
      registers: [this.registry],
      collect() {
        this.set({ backend }, store.changeSignal().up ? 1 : 0);
      },
    });
    let backlog: ReturnType<Store['webhooks']['backlog']> | undefined;
    // Both gauges from one query per scrape.
    const readBacklog = () =>
      (backlog ??= store.webhooks.backlog(Date.now(), DELIVERY_OVERDUE_MS).finally(() => setTimeout(() => (backlog = undefined), 100)));
    new Gauge({
      name: 'tessera_webhook_oldest_pending_seconds',
      help: 'Age of the oldest event whose webhook delivery is still waiting (sent neither successfully nor given up); 0 when none waits.',
      registers: [this.registry],
      async collect() {
        const { oldestPendingAt } = await readBacklog().catch(() => ({ oldestPendingAt: null }));
        this.set(oldestPendingAt === null ? 0 : Math.max(0, (Date.now() - oldestPendingAt) / 1000));
      },
    });
    new Gauge({
      name: 'tessera_webhook_deliveries_overdue',
      help: 'Webhook deliveries due for over a minute and not taken by any instance: none is sending.',
      registers: [this.registry],
      async collect() {
        const { overdue } = await readBacklog().catch(() => ({ overdue: 0 }));
        this.set(overdue);
      },
    });
    return instrumented.store;
  }

  /** Where `tessera_event_buffer_events` is read from. */
  watchEvents(events: { readonly unwritten: number }): void {
    this.#unwrittenEvents = () => events.unwritten;
  }

  eventsCounted(type: EventType, principal: Actor | null, reason: string | null, count: number): void {
    const kind = principal === 'admin' || principal === 'anonymous' ? principal : undefined;
    if (type === 'token.issued' && kind !== undefined) this.#issued.get(kind)!.add(count);
    else if (type === 'token.refused') this.#refusal(reason ?? 'unknown', kind ?? 'none').add(count);
    if (isAttestationReason(reason)) this.#attestations.get(`${reason} ${type === 'token.issued' ? 'issued' : 'refused'}`)?.add(count);
  }

  tokensRevoked(kind: PrincipalKind, count: number): void {
    this.#revoked.get(kind)!.add(count);
  }

  introspected(active: boolean): void {
    this.#introspections.get(active ? 'true' : 'false')!.add();
  }

  forwardAuthDecided(decision: ForwardAuthDecision): void {
    this.#decisions.get(decision)!.add();
  }

  rateLimited(limit: RateLimitName): void {
    this.#rateLimited.get(limit)!.add();
  }

  cacheLookups(cache: CacheName): CacheLookups {
    const hits = new CountSeries({ cache, result: 'hit' });
    const misses = new CountSeries({ cache, result: 'miss' });
    this.#caches.push(hits, misses);
    return {
      hit: () => hits.value++,
      miss: () => misses.value++,
    };
  }

  batchWritten(writer: BatchWriter, size: number, seconds: number): void {
    this.#batchSizes.get(writer)!.observe(size);
    this.#batchDurations.get(writer)!.observe(seconds);
  }

  eventWriteFailed(): void {
    this.#eventWriteFailures.add();
  }

  eventsLost(part: LostPart, reason: LossReason, count: number): void {
    this.#eventsLost.get(`${part} ${reason}`)!.add(count);
  }

  webhookAttempted(outcome: DeliveryOutcome): void {
    this.#webhookAttempts.get(outcome)!.add();
  }

  #refusal(reason: string, kind: string): CountSeries {
    const key = `${reason} ${kind}`;
    let series = this.#refusals.get(key);
    if (series === undefined) {
      series = new CountSeries({ reason, kind });
      this.#refusals.set(key, series);
    }
    return series;
  }

  /**
   * The metrics in Prometheus's text format (0.0.4), whatever the scraper accepts: every Prometheus
   * reads it, and nothing here needs OpenMetrics (no exemplars).
   */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: Registry.PROMETHEUS_CONTENT_TYPE, body: await this.registry.metrics() };
  }
}

function seriesOf<Value extends string>(
  values: readonly Value[],
  labels: (value: Value) => Record<string, string>,
): Map<Value, CountSeries> {
  return new Map(values.map((value) => [value, new CountSeries(labels(value))]));
}

/** A counter whose values are read from `read` when scraped. */
function collectedCounter(registry: Registry, name: string, help: string, labelNames: string[], read: () => Iterable<CountSeries>): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const series of read()) this.inc(series.labels, series.value);
    },
  });
}

/**
 * A histogram whose series are read from `read` when scraped (prom-client's `observe` is too slow
 * for a request's path). `always`: series shown even before their first observation.
 */
function collectedHistogram(
  registry: Registry,
  name: string,
  help: string,
  labelNames: string[],
  read: () => Iterable<HistogramSeries>,
  always = false,
): void {
  registry.registerMetric(new CollectedHistogram(name, help, labelNames, read, always));
}

type HistogramValues = Awaited<ReturnType<Histogram<string>['get']>>;

class CollectedHistogram extends Histogram<string> {
  constructor(
    private readonly metricName: string,
    private readonly metricHelp: string,
    labelNames: string[],
    private readonly read: () => Iterable<HistogramSeries>,
    private readonly always: boolean,
  ) {
    super({ name: metricName, help: metricHelp, labelNames, registers: [] });
  }

  override async get(): Promise<HistogramValues> {
    const values: { labels: Record<string, string>; value: number; metricName: string }[] = [];
    for (const series of this.read()) {
      if (series.count === 0 && !this.always) continue;
      for (const { le, count } of series.cumulative()) {
        values.push({ labels: { ...series.labels, le }, value: count, metricName: `${this.metricName}_bucket` });
      }
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.metricName}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.metricName}_count` });
    }
    // prom-client's types say `type` is an enum; its code, and the registry, use the string.
    return { name: this.metricName, help: this.metricHelp, type: 'histogram', values, aggregator: 'sum' } as unknown as HistogramValues;
  }

  /** What the registry reads for the text format (prom-client's own would read its empty series). */
  getForPromString(): Promise<HistogramValues> {
    return this.get();
  }
}

/** Whether the store answers a ping within `STORE_PING_TIMEOUT_MS`. */
async function answers(store: Store): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), STORE_PING_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      store.ping().then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
