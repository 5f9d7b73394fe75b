import type { AppStore } from '../apps/store.js';
import type { TokenStore } from '../tokens/store.js';

/** Everything the service keeps: one implementation per backend (`sqlite/`, `postgres/`). */
export interface Store {
  readonly backend: 'sqlite' | 'postgres';
  readonly apps: AppStore;
  readonly tokens: TokenStore;
  /**
   * Registers a listener called when apps may have changed in any process sharing the store: with
   * the app's id when it is known, with none when every app should be forgotten. It is called
   * within one second of the change.
   */
  onAppsChanged(listener: (appId?: string) => void): void;
  close(): Promise<void>;
}
