import { clientSecretDigest } from '../crypto.js';
import { TesseraError } from '../errors.js';
import type { Clock } from '../clock.js';
import { DEFAULT_APP_CONFIGURATION, MAX_APP_NAME_LENGTH, type AppDescription, type AppRecord, describeApp } from './app.js';
import { appNotFound } from './cache.js';
import { generateAppKeys, generateClientSecret, type AppKeys } from './keys.js';
import { AppConflictError, type AppStore } from './store.js';

export interface CreatedApp extends AppKeys {
  name: string;
  createdAt: string;
}

/** The operator's view of apps (the "developer portal"): used by the CLI and the first-run demo. */
export class AppService {
  constructor(
    private readonly store: AppStore,
    private readonly clock: Clock,
    /** Called after a change, so that this process's caches drop the app at once. */
    private readonly onChange: (appId: string) => void = () => {},
  ) {}

  async create(name: string): Promise<CreatedApp> {
    const trimmed = name.trim();
    if (trimmed.length === 0 || trimmed.length > MAX_APP_NAME_LENGTH) {
      throw new TesseraError('invalid_request', `The app name must be 1 to ${MAX_APP_NAME_LENGTH} characters.`);
    }
    for (let attempt = 0; ; attempt++) {
      const keys = generateAppKeys();
      const record: AppRecord = {
        appId: keys.appId,
        name: trimmed,
        appKey: keys.appKey,
        clientId: keys.clientId,
        clientSecretHash: clientSecretDigest(keys.clientSecret),
        adminId: keys.adminId,
        createdAt: this.clock.now(),
        configuration: { ...DEFAULT_APP_CONFIGURATION },
      };
      try {
        await this.store.insert(record);
        return { ...keys, name: trimmed, createdAt: new Date(record.createdAt).toISOString() };
      } catch (error) {
        // 64-bit random AppIDs practically never collide; retry a few times if they do.
        if (!(error instanceof AppConflictError) || attempt >= 3) throw error;
      }
    }
  }

  async list(): Promise<AppDescription[]> {
    return (await this.store.list()).map(describeApp);
  }

  async show(appId: string): Promise<AppDescription> {
    const app = await this.store.findById(appId);
    if (app === undefined) throw appNotFound();
    return describeApp(app);
  }

  /** Returns the new ClientSecret; the old one stops working. */
  async rotateSecret(appId: string): Promise<{ appId: string; clientId: string; clientSecret: string }> {
    const app = await this.store.findById(appId);
    if (app === undefined) throw appNotFound();
    const clientSecret = generateClientSecret();
    if (!(await this.store.updateClientSecretHash(appId, clientSecretDigest(clientSecret)))) {
      throw appNotFound();
    }
    this.onChange(appId);
    return { appId, clientId: app.clientId, clientSecret };
  }

  async delete(appId: string): Promise<void> {
    if (!(await this.store.delete(appId))) throw appNotFound();
    this.onChange(appId);
  }
}
