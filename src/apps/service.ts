import { clientSecretDigest } from '../crypto.js';
import { appNotFound } from '../error-catalogue.js';
import { TesseraError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { NewAuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import { OPERATOR, type RequestContext } from '../request-context.js';
import { hasControlCharacters } from '../text.js';
import { appTokensRevoked } from '../tokens/revocation.js';
import {
  DEFAULT_APP_CONFIGURATION,
  MAX_APP_NAME_LENGTH,
  describeApp,
  type AppConfiguration,
  type AppDescription,
  type AppRecord,
} from './app.js';
import { generateAppKeys, generateClientSecret, type AppKeys } from './keys.js';
import { AppConflictError, type AppStore } from './store.js';

export interface CreatedApp extends AppKeys {
  name: string;
  createdAt: string;
}

export interface RotatedSecret {
  appId: string;
  clientId: string;
  clientSecret: string;
  /** How many admin tokens were revoked with the old secret (0 unless asked for). */
  adminTokensRevoked: number;
}

/**
 * Apps' provisioning (the operator's "developer portal": the CLI and the first-run demo) and their
 * configuration (also an admin feature of the API).
 */
export class AppService {
  constructor(
    private readonly store: AppStore,
    private readonly clock: Clock,
    private readonly events: EventLog,
    /** Called after a change, so that this process's caches drop the app at once. */
    private readonly onChange: (appId: string) => void = () => {},
  ) {}

  async create(requestedName: string): Promise<CreatedApp> {
    const name = checkedAppName(requestedName);
    for (let attempt = 0; ; attempt++) {
      const keys = generateAppKeys();
      const record: AppRecord = {
        appId: keys.appId,
        name,
        appKey: keys.appKey,
        clientId: keys.clientId,
        clientSecretHash: clientSecretDigest(keys.clientSecret),
        adminId: keys.adminId,
        createdAt: this.clock.now(),
        configuration: { ...DEFAULT_APP_CONFIGURATION },
        anonymousCutoff: null,
      };
      try {
        await this.store.insert(record);
        return { ...keys, name, createdAt: new Date(record.createdAt).toISOString() };
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

  /**
   * Returns the new ClientSecret; the old one stops working. Only the operator may do this (never an
   * admin token: a leaked one must not lock the owner out).
   */
  async rotateSecret(appId: string, options: { revokeAdminTokens?: boolean } = {}): Promise<RotatedSecret> {
    const app = await this.store.findById(appId);
    if (app === undefined) throw appNotFound();
    const clientSecret = generateClientSecret();
    const revokeAdminTokens = options.revokeAdminTokens === true;
    const stamp = await this.events.stamp(appId, OPERATOR);
    // The rotation, the revocation and both events in one transaction: the new secret is returned
    // (and printed) only once all of it is written, and a failure leaves the old secret working.
    const rotation = await this.store.rotateClientSecret(
      appId,
      clientSecretDigest(clientSecret),
      { revokeAdminTokens },
      ({ adminTokensRevoked }) => [
        ...(revokeAdminTokens ? [appTokensRevoked(stamp, 'admin', adminTokensRevoked)] : []),
        { ...stamp, type: 'app.secret_rotated', details: { adminTokensRevoked } },
      ],
    );
    if (rotation === undefined) throw appNotFound();
    this.onChange(appId);
    return { appId, clientId: app.clientId, clientSecret, adminTokensRevoked: rotation.adminTokensRevoked };
  }

  /** Applies a configuration change (parsed by `parseConfigurationChanges`); returns the app as it now is. */
  async configure(appId: string, changes: Partial<AppConfiguration>, context: RequestContext): Promise<AppDescription> {
    const stamp = await this.events.stamp(appId, context);
    const changed: NewAuditEvent = { ...stamp, type: 'app.configuration_changed', details: changes };
    const updated = await this.store.updateConfiguration(appId, changes, () => [changed]);
    if (updated === undefined) throw appNotFound();
    this.onChange(appId);
    return describeApp(updated);
  }

  async delete(appId: string): Promise<void> {
    if (!(await this.store.delete(appId))) throw appNotFound();
    this.onChange(appId);
  }
}

/**
 * The name without surrounding whitespace: 1 to `MAX_APP_NAME_LENGTH` characters, none of which can
 * rearrange what a terminal shows when the name is listed.
 */
function checkedAppName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_APP_NAME_LENGTH) {
    throw new TesseraError('invalid_request', `The app name must be 1 to ${MAX_APP_NAME_LENGTH} characters.`);
  }
  if (hasControlCharacters(trimmed)) {
    throw new TesseraError(
      'invalid_request',
      'The app name must not contain control characters (newlines, tabs, escape sequences) or bidirectional overrides.',
    );
  }
  return trimmed;
}
