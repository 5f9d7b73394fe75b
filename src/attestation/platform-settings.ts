import { appNotFound, notFound } from 'tessera-tokens/internal/error-catalogue.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import type { AppAccess } from '../app-access.js';
import type { AppStore } from '../apps/store.js';
import type { EventDetails } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import type { EventStore } from '../events/store.js';
import { developerDetails, type RequestContext } from '../request-context.js';
import type { AttestationStore } from './store.js';

/** The tables a change of a platform's settings is written to, in one transaction. */
export interface PlatformSettingsTables {
  readonly apps: AppStore;
  readonly attestation: AttestationStore;
  readonly events: EventStore;
}

/** What tells one platform's settings from another's: how they are shown, and what their change's event says. */
export interface PlatformSettingsKind<Settings, Description> {
  provider: 'android' | 'apple';
  describe(settings: Settings, updatedAt: number): Description;
  /** The `app.configuration_changed` event's details of a change to `settings` (null: removed); never a key. */
  changed(settings: Settings | null): EventDetails;
}

/**
 * An app's settings for one platform's attestation (Play Integrity's package and keys, App Attest's
 * ids), for its admin (`configuration:write`, `configuration:read` to read), its developers and the
 * operator: kept apart from the configuration (`attestation_settings`), each change an event.
 */
export class PlatformSettings<Settings, Description> {
  constructor(
    private readonly store: Transactional<PlatformSettingsTables> & Pick<PlatformSettingsTables, 'attestation'>,
    private readonly events: EventLog,
    private readonly access: AppAccess,
    private readonly kind: PlatformSettingsKind<Settings, Description>,
  ) {}

  /** The app's settings for checking, or undefined when it has none. */
  async settingsOf(appId: string): Promise<Settings | undefined> {
    const found = await this.store.attestation.findSettings(appId, this.kind.provider);
    return found && (JSON.parse(found.settings) as Settings);
  }

  async set(appId: string, settings: Settings, context: RequestContext): Promise<Description> {
    await this.access.authorize(appId, 'change_configuration', context);
    const stamp = await this.events.stamp(appId, context);
    await this.store.transaction(async (tx) => {
      if ((await tx.apps.lock(appId, 'NO KEY UPDATE')) === undefined) throw appNotFound();
      await tx.attestation.putSettings({ appId, provider: this.kind.provider, settings: JSON.stringify(settings), updatedAt: stamp.at });
      await tx.events.append([
        { ...stamp, type: 'app.configuration_changed', details: { ...this.kind.changed(settings), ...developerDetails(context) } },
      ]);
    });
    return this.kind.describe(settings, stamp.at);
  }

  async show(appId: string, context: RequestContext): Promise<Description> {
    await this.access.authorize(appId, 'view_configuration', context);
    const found = await this.store.attestation.findSettings(appId, this.kind.provider);
    if (found === undefined) throw notFound();
    return this.kind.describe(JSON.parse(found.settings) as Settings, found.updatedAt);
  }

  async remove(appId: string, context: RequestContext): Promise<void> {
    await this.access.authorize(appId, 'change_configuration', context);
    const stamp = await this.events.stamp(appId, context);
    await this.store.transaction(async (tx) => {
      if ((await tx.attestation.deleteSettings(appId, this.kind.provider)) === undefined) throw notFound();
      await tx.events.append([
        { ...stamp, type: 'app.configuration_changed', details: { ...this.kind.changed(null), ...developerDetails(context) } },
      ]);
    });
  }
}
