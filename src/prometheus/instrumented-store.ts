import type { Store } from '../store/store.js';
import { CountSeries, DURATION_BUCKETS, HistogramSeries } from './series.js';

/** The parts of the store whose calls are timed, and the prefix of their operations' names. */
const PARTS = {
  apps: 'apps',
  tokens: 'tokens',
  credentials: 'credentials',
  revokedTokens: 'revoked_tokens',
  keys: 'keys',
  events: 'events',
  developers: 'developers',
  onceClaims: 'once_claims',
  upgrade: 'upgrade',
} as const satisfies Partial<Record<keyof Store, string>>;

/** The timings and failures of one store operation (`tokens.insert`). */
export interface StoreOperation {
  readonly name: string;
  readonly durations: HistogramSeries;
  readonly errors: CountSeries;
}

/**
 * The store with every call of its parts timed (`tessera_store_operation_duration_seconds`) and
 * its failures counted (`tessera_store_errors_total`), by operation: the method's name, a closed
 * set made here, once. A path that calls no store method (an anonymous token issued or checked)
 * pays nothing; one that does pays two clock reads and an addition.
 */
export function instrumentStore(store: Store): { store: Store; operations: StoreOperation[] } {
  const operations: StoreOperation[] = [];
  const instrumented: Store = Object.create(store) as Store;
  for (const [part, prefix] of Object.entries(PARTS) as [keyof typeof PARTS, string][]) {
    const target = store[part] as unknown as Record<string, unknown>;
    const timed: Record<string, unknown> = Object.create(target) as Record<string, unknown>;
    for (const method of methodNames(target)) {
      const operation: StoreOperation = {
        name: `${prefix}.${method}`,
        durations: new HistogramSeries({ operation: `${prefix}.${method}` }, DURATION_BUCKETS),
        errors: new CountSeries({ operation: `${prefix}.${method}` }),
      };
      operations.push(operation);
      timed[method] = timedCall(target, target[method] as (...args: unknown[]) => unknown, operation);
    }
    Object.defineProperty(instrumented, part, { value: timed, enumerable: true });
  }
  return { store: instrumented, operations };
}

/** The functions of an object, own or inherited from its class. */
function methodNames(target: Record<string, unknown>): string[] {
  const names = new Set<string>();
  for (
    let object: object | null = target;
    object !== null && object !== Object.prototype;
    object = Object.getPrototypeOf(object) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(object)) {
      if (name !== 'constructor' && typeof target[name] === 'function') names.add(name);
    }
  }
  return [...names];
}

function timedCall(target: object, method: (...args: unknown[]) => unknown, operation: StoreOperation): (...args: unknown[]) => unknown {
  const { durations, errors } = operation;
  return (...args) => {
    const started = performance.now();
    let result: unknown;
    try {
      result = method.apply(target, args);
    } catch (error) {
      errors.add();
      throw error;
    }
    if (!(result instanceof Promise)) {
      durations.observe((performance.now() - started) / 1000);
      return result;
    }
    return result.then(
      (value: unknown) => {
        durations.observe((performance.now() - started) / 1000);
        return value;
      },
      (error: unknown) => {
        errors.add();
        throw error;
      },
    );
  };
}
