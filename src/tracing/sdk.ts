import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { diag, DiagLogLevel, type Span } from '@opentelemetry/api';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK, resources, tracing, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { HEALTH_PATH, READINESS_PATH } from '../http/paths.js';
import { requestSampler } from './sampling.js';
import { TesseraSpans } from './spans.js';

/** What the request's span is named and labelled from: a Fastify request's (Fastify is the edge's to import). */
interface TracedRequest {
  id: string;
  method: string;
  url: string;
  routeOptions: { url?: string };
}

type Instrumentation = NonNullable<NodeSDKConfiguration['instrumentations']>[number];

/**
 * `@fastify/otel`, loaded without its type declarations: they would declare, for every Fastify
 * request and route of the program, members that exist only while tracing is on.
 */
const { FastifyOtelInstrumentation } = createRequire(import.meta.url)('@fastify/otel') as {
  FastifyOtelInstrumentation: new (options: {
    registerOnInitialization: boolean;
    instrumentHooks: boolean;
    instrumentHandler: boolean;
    ignorePaths: (route: { url: string; handler?: unknown }) => boolean;
    requestHook: (span: Span, request: TracedRequest) => void;
  }) => Instrumentation & { plugin(): Tracing['requests']['plugin'] };
};

/** What `tessera serve` holds of tracing once it is on. */
export interface Tracing {
  /** For `buildServer` (`RequestTracing`): `@fastify/otel`'s plugin, and which requests it is given. */
  readonly requests: {
    plugin: (instance: unknown, options: unknown, done: (error?: Error) => void) => void;
    sampled?: (request: IncomingMessage) => boolean;
    traced?: (response: ServerResponse) => void;
  };
  readonly spans: TesseraSpans;
  /** Where spans go and which are kept, for the start-up log line (never a header or a credential). */
  readonly summary: { exporter: string; endpoint?: string; sampler: string; ratio?: string };
  /**
   * Where OpenTelemetry's own warnings and errors go (an export that failed: the collector is away),
   * at most one a minute, with how many were left out before it. Unless `OTEL_LOG_LEVEL` is set:
   * then the SDK writes them itself, to the console, as its documentation says.
   */
  onProblem(listener: (message: string, leftOut: number) => void): void;
  /** Sends the spans not yet sent, within `timeoutMs`, then stops. */
  shutdown(timeoutMs: number): Promise<void>;
}

/**
 * OpenTelemetry's Node SDK, configured by the standard `OTEL_*` variables (exporter and protocol,
 * endpoint and headers, sampler, propagators, resource attributes, batch sizes), for traces only:
 * Tessera's metrics are Prometheus' and its logs are on stdout, so the SDK's own metrics and logs
 * exporters are left out, whatever `OTEL_METRICS_EXPORTER` and `OTEL_LOGS_EXPORTER` say.
 *
 * Started before the store and the server are imported: the PostgreSQL instrumentation patches
 * `pg` as it loads. `@fastify/otel` needs no patching: its plugin, registered by the server,
 * opens each request's span, continuing a caller's W3C `traceparent`.
 *
 * Which requests are traced is decided as each arrives (`requestSampler`: the sampler the variables
 * name, applied to the request's `traceparent`), and only those go through `@fastify/otel`
 * (`buildServer`); the SDK then keeps every span it is asked for. Where only the SDK can decide
 * (propagators other than W3C's), every request goes through it, and the SDK samples.
 */
export function startSdk(version: string, env: NodeJS.ProcessEnv): Tracing {
  const sampled = requestSampler(env);
  // Registered by the server on the Fastify instance that serves the requests traced (`buildServer`).
  const fastify = new FastifyOtelInstrumentation({
    registerOnInitialization: false,
    // The request's span only: Tessera's own spans show what the hooks and handlers do. A handler
    // runs in the context of the request's span all the same.
    instrumentHooks: false,
    instrumentHandler: false,
    // Load balancers' and orchestrators' probes, every few seconds: no traces.
    ignorePaths: ({ url }) => {
      const path = url.split('?', 1)[0];
      return path === HEALTH_PATH || path === READINESS_PATH;
    },
    requestHook: (span, request) => {
      if (!span.isRecording()) return;
      // HTTP semantic conventions: `{method} {route}`, the route's template rather than its path.
      const route = request.routeOptions.url;
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`);
      // @fastify/otel puts the URL as sent: its query string, which a client may have put a token in, goes.
      span.setAttribute('url.path', request.url.split('?', 1)[0] ?? '');
      span.setAttribute('tessera.request_id', request.id);
    },
  });
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read by the SDK, override these.
    resource: resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.name': 'tessera', 'service.version': version })),
    // The requests to trace are decided as they arrive; every span of theirs is kept.
    ...(sampled === undefined ? {} : { sampler: new tracing.AlwaysOnSampler() }),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      fastify,
      // No parameters are recorded (they hold hashes of secrets); queries outside a request (the
      // change signal's heartbeats, housekeeping) make no traces of their own.
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    ],
  });
  const problems = new Problems();
  if ((env.OTEL_LOG_LEVEL?.trim() ?? '') === '') {
    const say = (message: string, ...args: unknown[]) => problems.report([readable(message), ...args.map(String)].join(' '));
    const quiet = () => {};
    diag.setLogger({ error: say, warn: say, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.WARN);
  }
  sdk.start();
  // Decided as requests arrive, the requests traced are known: Tessera's spans look for a recording
  // span only while one of them is in flight.
  const spans = new TesseraSpans(version, { requestsCounted: sampled !== undefined });
  return {
    requests: {
      plugin: fastify.plugin(),
      ...(sampled === undefined
        ? {}
        : { sampled: (request) => sampled(request.headers), traced: (response) => spans.requestTraced(response) }),
    },
    spans,
    summary: summaryOf(env),
    onProblem: (listener) => problems.listen(listener),
    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()));
      try {
        await Promise.race([sdk.shutdown().catch(() => {}), late]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** How often OpenTelemetry's problems are logged, at most. */
const PROBLEM_INTERVAL_MS = 60_000;

class Problems {
  #listener: ((message: string, leftOut: number) => void) | undefined;
  #lastAt = -Infinity;
  #leftOut = 0;

  listen(listener: (message: string, leftOut: number) => void): void {
    this.#listener = listener;
  }

  report(message: string): void {
    const now = performance.now();
    if (this.#listener === undefined || now - this.#lastAt < PROBLEM_INTERVAL_MS) {
      this.#leftOut++;
      return;
    }
    this.#lastAt = now;
    this.#listener(message.slice(0, 1_000), this.#leftOut);
    this.#leftOut = 0;
  }
}

/** The SDK reports a failed export as the error's JSON: its message says it. */
function readable(message: string): string {
  try {
    const parsed = JSON.parse(message) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: as it is
  }
  return message;
}

function summaryOf(env: NodeJS.ProcessEnv): Tracing['summary'] {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim() || 'otlp';
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf';
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return {
    exporter: exporter === 'otlp' ? `otlp (${protocol})` : exporter,
    ...(endpoint === undefined || endpoint === '' ? {} : { endpoint: withoutCredentials(endpoint) }),
    sampler: env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on',
    ...(env.OTEL_TRACES_SAMPLER_ARG?.trim() ? { ratio: env.OTEL_TRACES_SAMPLER_ARG.trim() } : {}),
  };
}

function withoutCredentials(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    url.username = '';
    url.password = '';
    url.search = '';
    return url.toString();
  } catch {
    return '(not a URL)';
  }
}
