import { methodNames, STORE_PARTS, wrappedTables } from '../store/methods.js';
import type { Store } from '../store/store.js';
import { CountSeries, DURATION_BUCKETS, HistogramSeries } from './series.js';

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
  const byName = new Map<string, StoreOperation>();
  const operationOf = (name: string): StoreOperation => {
    let operation = byName.get(name);
    if (operation === undefined) {
      operation = {
        name,
        durations: new HistogramSeries({ operation: name }, DURATION_BUCKETS),
        errors: new CountSeries({ operation: name }),
      };
      byName.set(name, operation);
      operations.push(operation);
    }
    return operation;
  };
  const timedPart = (prefix: string, target: Record<string, unknown>): Record<string, unknown> => {
    const timed: Record<string, unknown> = Object.create(target) as Record<string, unknown>;
    for (const method of methodNames(target)) {
      timed[method] = timedCall(target, target[method] as (...args: unknown[]) => unknown, operationOf(`${prefix}.${method}`));
    }
    return timed;
  };
  const instrumented: Store = Object.create(store) as Store;
  for (const [part, prefix] of Object.entries(STORE_PARTS) as [keyof typeof STORE_PARTS, string][]) {
    Object.defineProperty(instrumented, part, {
      value: timedPart(prefix, store[part] as unknown as Record<string, unknown>),
      enumerable: true,
    });
  }
  // A transaction is timed whole (`transaction`), and its tables' calls as the store's own.
  const transaction: Store['transaction'] = (work) =>
    store.transaction((tx) => work(wrappedTables(tx, (part, target) => timedPart(STORE_PARTS[part], target as Record<string, unknown>))));
  Object.defineProperty(instrumented, 'transaction', {
    value: timedCall(store, transaction as (...args: unknown[]) => unknown, operationOf('transaction')),
    enumerable: true,
  });
  return { store: instrumented, operations };
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
