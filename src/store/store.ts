import type { AppStore } from '../apps/store.js';
import type { EventStore } from '../events/store.js';
import type { TokenStore } from '../tokens/store.js';

/** Everything the service keeps: one implementation per backend (`sqlite/`, `postgres/`). */
export interface Store {
  readonly backend: 'sqlite' | 'postgres';
  readonly apps: AppStore;
  readonly tokens: TokenStore;
  readonly events: EventStore;
  /**
   * Registers a listener called when apps or tokens may have been changed by another process sharing
   * the store: with the app's id when only that app's data changed, with none when anything may
   * have. It is called within one second of the change; caches drop what it names.
   */
  onChange(listener: (appId?: string) => void): void;
  /** Resolves if the store answers now (readiness); throws otherwise. */
  ping(): Promise<void>;
  /** Writes what is pending, then closes. Idempotent. */
  close(): Promise<void>;
}
