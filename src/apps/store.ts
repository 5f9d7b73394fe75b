import type { AppConfiguration, AppRecord } from './app.js';

/** The apps' storage seam; one implementation per backend under `src/store/`. */
export interface AppStore {
  /** Throws `AppConflictError` if the AppID or ClientID is taken. */
  insert(app: AppRecord): Promise<void>;
  findById(appId: string): Promise<AppRecord | undefined>;
  /** Oldest first. */
  list(): Promise<AppRecord[]>;
  count(): Promise<number>;
  /** False if there is no such app. */
  updateClientSecretHash(appId: string, clientSecretHash: Buffer): Promise<boolean>;
  /**
   * Sets the given configuration fields and leaves the others as they are (concurrent changes of
   * different fields both hold). The updated app, or undefined if there is no such app.
   */
  updateConfiguration(appId: string, changes: Partial<AppConfiguration>): Promise<AppRecord | undefined>;
  /** Deletes the app and every token and event of it. False if there is no such app. */
  delete(appId: string): Promise<boolean>;
}

export class AppConflictError extends Error {
  constructor() {
    super('an app with this AppID or ClientID exists');
    this.name = 'AppConflictError';
  }
}
