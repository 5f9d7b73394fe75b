interface Waiting<V> {
  resolve: (value: V | undefined) => void;
  reject: (error: unknown) => void;
}

export interface BatchedReadsOptions<K, V> {
  /** Reads every key of the batch in one statement (`= ANY(:keys)`); what is absent is left out. */
  readMany(keys: K[]): Promise<V[]>;
  /** A key as a string that identifies it (a Buffer's bytes as latin1). */
  keyOf(key: K): string;
  /** The key of a value read. */
  keyOfValue(value: V): string;
  maxBatch?: number;
}

const DEFAULT_MAX_BATCH = 500;

/**
 * Group commit for reads: the lookups asked for within one turn of the event loop go to the store
 * as one statement. A cache that misses for many keys at once (after an invalidation, under load,
 * over more keys than it holds) then costs the database one round trip a turn, not one a key.
 * For a store that answers over the network (PostgreSQL); SQLite answers at once, without this.
 */
export class BatchedReads<K, V> {
  #pending = new Map<string, { key: K; waiting: Waiting<V>[] }>();
  #scheduled = false;

  constructor(private readonly options: BatchedReadsOptions<K, V>) {}

  read(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const id = this.options.keyOf(key);
      const pending = this.#pending.get(id);
      if (pending !== undefined) pending.waiting.push({ resolve, reject });
      else this.#pending.set(id, { key, waiting: [{ resolve, reject }] });
      if (this.#pending.size >= (this.options.maxBatch ?? DEFAULT_MAX_BATCH)) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.size === 0) return;
    this.#pending = new Map();
    this.options.readMany([...batch.values()].map(({ key }) => key)).then(
      (values) => {
        const found = new Map(values.map((value) => [this.options.keyOfValue(value), value]));
        for (const [id, { waiting }] of batch) for (const { resolve } of waiting) resolve(found.get(id));
      },
      (error: unknown) => {
        for (const { waiting } of batch.values()) for (const { reject } of waiting) reject(error);
      },
    );
  }
}
