import type { ServerResponse } from 'node:http';
import { context, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import type { Principal } from 'tessera-tokens/internal/principal.js';
import { methodNames, STORE_PARTS, wrappedTables } from '../store/methods.js';
import type { Store } from '../store/store.js';
import type { Tessera } from '../tessera.js';
import type { IssuedToken } from '../tokens/issuer.js';

/**
 * Tessera's own spans: the token check, token issuance, and each call of the store, as children of
 * the request's span (`@fastify/otel`). Loaded only when tracing is on; the services are wrapped
 * here, once, rather than asking on every call whether to trace, so that with tracing off their code
 * and cost are what they were. A span is made only inside a sampled trace: while no traced request
 * is in flight, a call costs one comparison; otherwise, one look at the active span.
 */
export class TesseraSpans {
  readonly #tracer: Tracer;
  /** Whether each traced request is told (`requestTraced`), so that none in flight means no span to make. */
  readonly #requestsCounted: boolean;
  #tracedInFlight = 0;

  constructor(version: string, { requestsCounted }: { requestsCounted: boolean }) {
    this.#tracer = trace.getTracer('tessera', version);
    this.#requestsCounted = requestsCounted;
  }

  /**
   * A request chosen for tracing, in flight until its answer is sent or its connection lost: the
   * 99 % of calls made while none is cost a comparison, rather than a look at the active context.
   */
  requestTraced(response: ServerResponse): void {
    this.#tracedInFlight++;
    response.once('close', () => this.#tracedInFlight--);
  }

  /** The store with every call of its parts in a span, `store tokens.insert`. */
  traceStore(store: Store): Store {
    const traced: Store = Object.create(store) as Store;
    const system = store.backend === 'postgres' ? 'postgresql' : 'sqlite';
    const tracedPart = (prefix: string, target: Record<string, unknown>): Record<string, unknown> => {
      const wrapped: Record<string, unknown> = Object.create(target) as Record<string, unknown>;
      for (const method of methodNames(target)) {
        const operation = `${prefix}.${method}`;
        const attributes = { 'tessera.store.operation': operation, 'db.system.name': system };
        wrapped[method] = this.#wrap(
          `store ${operation}`,
          (target[method] as (...args: unknown[]) => unknown).bind(target),
          () => attributes,
        );
      }
      return wrapped;
    };
    for (const [part, prefix] of Object.entries(STORE_PARTS) as [keyof typeof STORE_PARTS, string][]) {
      Object.defineProperty(traced, part, {
        value: tracedPart(prefix, store[part] as unknown as Record<string, unknown>),
        enumerable: true,
      });
    }
    // A transaction is a span (`store transaction`) whose children are its tables' calls, traced as the store's own.
    const attributes = { 'tessera.store.operation': 'transaction', 'db.system.name': system };
    const transaction: Store['transaction'] = (work) =>
      store.transaction((tx) =>
        work(wrappedTables(tx, (part, target) => tracedPart(STORE_PARTS[part], target as Record<string, unknown>))),
      );
    Object.defineProperty(traced, 'transaction', {
      value: this.#wrap('store transaction', transaction as (...args: unknown[]) => unknown, () => attributes),
      enumerable: true,
    });
    return traced;
  }

  /**
   * The checker's and the issuer's methods replaced, on these objects, by traced ones: the
   * authenticator, the routes and the middleware hold these objects, and call them as before.
   */
  traceServices(tessera: Pick<Tessera, 'checker' | 'issuer'>): void {
    const { checker, issuer } = tessera;
    checker.principal = this.#wrap('tessera.token.check', checker.principal.bind(checker), (app) => ({ 'tessera.app_id': app.appId }), {
      onResult: (span, principal: Principal | undefined) => {
        span.setAttribute('tessera.token.valid', principal !== undefined);
        if (principal !== undefined) span.setAttribute('tessera.token.kind', principal.kind);
      },
    });
    checker.introspect = this.#wrap('tessera.token.introspect', checker.introspect.bind(checker), (app) => ({
      'tessera.app_id': app.appId,
    }));
    issuer.issue = this.#wrap('tessera.token.issue', issuer.issue.bind(issuer), (app) => ({ 'tessera.app_id': app.appId }), {
      onResult: (span, issued: IssuedToken) => span.setAttribute('tessera.token.kind', issued.kind),
    });
  }

  #wrap<A extends unknown[], R>(
    name: string,
    method: (...args: A) => R,
    attributesOf: (...args: A) => Attributes,
    { onResult }: { onResult?: (span: Span, result: Awaited<R>) => void } = {},
  ): (...args: A) => R {
    const tracer = this.#tracer;
    return (...args: A): R => {
      if (this.#requestsCounted && this.#tracedInFlight === 0) return method(...args);
      const parent = context.active();
      if (trace.getSpan(parent)?.isRecording() !== true) return method(...args);
      const span = tracer.startSpan(name, { attributes: attributesOf(...args) }, parent);
      let result: R;
      try {
        result = context.with(trace.setSpan(parent, span), () => method(...args));
      } catch (error) {
        failed(span, error);
        throw error;
      }
      if (!(result instanceof Promise)) {
        onResult?.(span, result as Awaited<R>);
        span.end();
        return result;
      }
      return result.then(
        (value: Awaited<R>) => {
          onResult?.(span, value);
          span.end();
          return value;
        },
        (error: unknown) => {
          failed(span, error);
          throw error;
        },
      ) as R;
    };
  }
}

/**
 * A refusal in the contract's terms (a 4xx: a wrong secret, an unknown app) is an answer, not a
 * failure: the span says which; a 5xx or an unexpected error marks the span as failed.
 */
function failed(span: Span, error: unknown): void {
  if (isTesseraError(error)) {
    span.setAttribute('tessera.error.code', error.code);
    if (error.status < 500) {
      span.end();
      return;
    }
  }
  span.recordException(error as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
  span.end();
}
