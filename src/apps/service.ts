import type { Capabilities } from '../upgrade/capabilities.js';
import type { AppAccess } from '../app-access.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import { appNotFound, developerNotFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { developerStamp } from '../developers/stamp.js';
import type { NewAuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import { developerDetails, type RequestContext } from '../request-context.js';
import { claimOnce, onceClaim, type OnceClaimStore } from '../once-claims.js';
import { hasControlCharacters } from 'tessera-tokens/internal/text.js';
import {
  DEFAULT_APP_CONFIGURATION,
  MAX_APP_NAME_LENGTH,
  describeApp,
  type AppConfiguration,
  type AppDescription,
  type AppRecord,
} from 'tessera-tokens/internal/apps/app.js';
import { generateAppAccessKeys, type AppAccessKeys } from './access-keys.js';
import { MAX_ALLOWED_ORIGINS } from 'tessera-tokens/internal/apps/origins.js';
import { generateClientSecret } from './secret-format.js';
import { appTokensRevoked, type RevocationKind } from './revoke-all.js';
import { checkedGraceSeconds } from './secret-rotation.js';
import type { AppStore } from './store.js';
import type { DeveloperStore } from '../developers/store.js';
import type { EventStore } from '../events/store.js';
import { StoreConflictError, type Transactional } from 'tessera-tokens/internal/transaction.js';

export interface CreatedApp extends AppAccessKeys {
  name: string;
  createdAt: string;
}

/** The developer an app is created for (`AppService.create`), and how many apps it may own (null: any number). */
export interface AppOwnerToBe {
  developerId: string;
  maxOwnedApps: number | null;
  context: RequestContext;
  /** A form's once value (`src/once-claims.ts`): the app is created only if it claims it. */
  once?: string | undefined;
}

/**
 * The developer owns as many apps as it may already (`ownedApps`). Not a `TesseraError`: the one
 * caller that sets a limit (`OwnedApps`) records the refusal and answers it in its own words.
 */
export class AppLimitReached extends Error {
  constructor(readonly ownedApps: number) {
    super(`the developer owns ${ownedApps} apps already`);
    this.name = 'AppLimitReached';
  }
}

export interface RotatedSecret {
  appId: string;
  clientId: string;
  clientSecret: string;
  /** How many admin tokens were revoked with the old secret (0 unless asked for). */
  adminTokensRevoked: number;
  /** Until when the replaced secret keeps working (ISO 8601); null: it stopped at once. */
  previousSecretValidUntil: string | null;
  /**
   * When an earlier rotation's grace period was still running: the instant (ISO 8601) until which
   * the secret before the replaced one was to work. It stopped at once, since only one previous
   * secret is kept. Null otherwise.
   */
  endedEarlierSecretValidUntil: string | null;
}

export interface RotationOptions {
  /** Also revoke every admin token of the app (whichever secret it was issued with). */
  revokeAdminTokens?: boolean;
  /** Keep the replaced secret working this many seconds (1 to `MAX_SECRET_GRACE_SECONDS`); none: it stops at once. */
  graceSeconds?: number;
  /** A form's once value (`src/once-claims.ts`): the rotation is made only if it claims it. */
  once?: string;
}

/** The tables an app's change is written to, in one transaction. */
export interface AppTables {
  readonly apps: AppStore;
  /** The part of the token store a rotation uses (`TokenStore.deleteOfApp`), named here: `tokens/` imports `apps/`. */
  readonly tokens: { deleteOfApp(appId: string, kind: RevocationKind): Promise<number> };
  readonly events: EventStore;
  readonly developers: DeveloperStore;
  readonly onceClaims: OnceClaimStore;
}

/**
 * Apps' provisioning (the operator's "developer portal": the CLI and the first-run demo) and their
 * configuration (also an admin feature of the API). Each read and each change of one app asks
 * `access` first whether whoever the context names may make it.
 */
export class AppService {
  constructor(
    private readonly store: AppStore,
    private readonly transactions: Transactional<AppTables>,
    private readonly clock: Clock,
    private readonly events: EventLog,
    private readonly access: AppAccess,
    /** Whether every instance may honour a grace period (`src/upgrade/`). */
    private readonly capabilities: Capabilities,
    /** Called after a change, so that this process's caches drop the app at once. */
    private readonly onChange: (appId: string) => void = () => {},
  ) {}

  /**
   * A new app with its four keys. With `owner`, the developer is its owner from the start, written
   * with it (and `app.owner_changed` in its log) in one transaction, unless the developer owns
   * `maxOwnedApps` apps already (`AppLimitReached`) or is gone or disabled (`DEVELOPER_NOT_FOUND`):
   * then nothing is written.
   */
  async create(requestedName: string, owner?: AppOwnerToBe): Promise<CreatedApp> {
    const name = checkedAppName(requestedName);
    for (let attempt = 0; ; attempt++) {
      const keys = generateAppAccessKeys();
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
        adminGeneration: 0,
        previousSecret: null,
        credentials: [],
      };
      try {
        if (owner === undefined) await this.store.insert(record);
        else await this.#insertOwned(record, owner);
        return { ...keys, name, createdAt: new Date(record.createdAt).toISOString() };
      } catch (error) {
        // 64-bit random AppIDs practically never collide; retry a few times if they do.
        if (!(error instanceof StoreConflictError) || attempt >= 3) throw error;
      }
    }
  }

  async #insertOwned(record: AppRecord, { developerId, maxOwnedApps, context, once }: AppOwnerToBe): Promise<void> {
    const stamp = await this.events.stamp(record.appId, context);
    const ownerChanged: NewAuditEvent = {
      ...stamp,
      type: 'app.owner_changed',
      // `created`: the app's first event, the owner it was made with (not a change of owner).
      details: { ...developerDetails(context), ownerId: developerId, previousOwnerId: null, created: true },
    };
    const claim = once === undefined ? undefined : onceClaim(once, stamp.at);
    await this.transactions.transaction(async (tx) => {
      // Insertions for one developer take turns (its row is held), so that each counts what the one
      // before it inserted, and several at the same moment cannot pass its limit together.
      if ((await tx.developers.accounts.lockEnabled(developerId, 'NO KEY UPDATE')) === undefined) throw developerNotFound();
      const ownedApps = await tx.developers.members.countOwned(developerId);
      if (maxOwnedApps !== null && ownedApps >= maxOwnedApps) throw new AppLimitReached(ownedApps);
      await claimOnce(tx.onceClaims, claim);
      await tx.apps.insert(record);
      await tx.developers.members.insertOwner(record.appId, developerId, record.createdAt);
      await tx.events.append([ownerChanged]);
    });
  }

  async list(): Promise<AppDescription[]> {
    return (await this.store.list()).map(describeApp);
  }

  /**
   * The app as whoever asks may see it: its keys (never the ClientSecret) and configuration. A
   * developer of no app, and an app that does not exist, are both `APP_NOT_FOUND`.
   */
  async show(appId: string, context: RequestContext): Promise<AppDescription> {
    await this.access.authorize(appId, 'view_app', context);
    const app = await this.store.findById(appId);
    if (app === undefined) throw appNotFound();
    return describeApp(app);
  }

  /**
   * Returns the new ClientSecret. The old one stops working at once, or with `graceSeconds` at the
   * end of that period; a previous secret kept by an earlier rotation stops at once either way.
   * Only the operator or the app's owner may do this, never an admin token: a leaked one must not
   * lock the owner out.
   */
  async rotateSecret(appId: string, options: RotationOptions, context: RequestContext): Promise<RotatedSecret> {
    await this.access.authorize(appId, 'rotate_secret', context);
    const revokeAdminTokens = options.revokeAdminTokens === true;
    const graceSeconds = options.graceSeconds === undefined ? null : checkedGraceSeconds(options.graceSeconds);
    if (revokeAdminTokens && graceSeconds !== null) {
      // Revoking admin tokens answers a leaked secret, which must not keep working.
      throw new TesseraError(
        'invalid_request',
        'A grace period and revoking the admin tokens do not go together: a leaked secret must stop at once.',
      );
    }
    if (graceSeconds !== null) await this.capabilities.require('secretGracePeriods');
    const app = await this.store.findById(appId);
    if (app === undefined) throw appNotFound();
    const clientSecret = generateClientSecret();
    const stamp = await this.events.stamp(appId, context);
    const previousSecretValidUntil = graceSeconds === null ? null : stamp.at + graceSeconds * 1000;
    // The rotation, the revocation and both events in one transaction: the new secret is returned
    // (and printed) only once all of it is written, and a failure leaves the old secret working.
    const once = options.once === undefined ? undefined : onceClaim(options.once, stamp.at);
    const adminTokensRevoked = await this.transactions.transaction(async (tx) => {
      if ((await tx.apps.rotateClientSecret(appId, clientSecretDigest(clientSecret), previousSecretValidUntil)) === undefined) {
        throw appNotFound();
      }
      await claimOnce(tx.onceClaims, once);
      const removed = revokeAdminTokens ? await tx.tokens.deleteOfApp(appId, 'admin') : 0;
      await tx.events.append([
        ...(revokeAdminTokens ? [appTokensRevoked(stamp, 'admin', removed, context)] : []),
        {
          ...stamp,
          type: 'app.secret_rotated',
          details: { ...developerDetails(context), adminTokensRevoked: removed, previousSecretValidUntil },
        },
      ]);
      return removed;
    });
    this.onChange(appId);
    const earlier = app.previousSecret;
    return {
      appId,
      clientId: app.clientId,
      clientSecret,
      adminTokensRevoked,
      previousSecretValidUntil: isoOrNull(previousSecretValidUntil),
      endedEarlierSecretValidUntil: earlier !== null && earlier.validUntil > stamp.at ? isoOrNull(earlier.validUntil) : null,
    };
  }

  /**
   * Ends the ClientSecret the last rotation replaced before its grace period is over (once the
   * server code has the new one, or when the old one turns out to have leaked): it is refused from
   * now on, on every instance, a token request racing this included. Who may rotate may end it.
   * Returns the end it had (ISO 8601), or null when no previous secret was working.
   */
  async endPreviousSecret(appId: string, context: RequestContext): Promise<{ endedPreviousSecretValidUntil: string | null }> {
    await this.access.authorize(appId, 'rotate_secret', context);
    const stamp = await this.events.stamp(appId, context);
    const ended = await this.transactions.transaction(async (tx) => {
      const found = await tx.apps.endPreviousSecret(appId, stamp.at);
      if (found === undefined) throw appNotFound();
      if (found.validUntil === null) return null;
      await tx.events.append([
        {
          ...stamp,
          type: 'app.previous_secret_ended',
          details: { ...developerDetails(context), previousSecretValidUntil: found.validUntil },
        },
      ]);
      return found.validUntil;
    });
    if (ended !== null) this.onChange(appId);
    return { endedPreviousSecretValidUntil: isoOrNull(ended) };
  }

  /** Applies a configuration change (parsed by `parseConfigurationChanges`); returns the app as it now is. */
  async configure(appId: string, changes: Partial<AppConfiguration>, context: RequestContext): Promise<AppDescription> {
    await this.access.authorize(appId, 'change_configuration', context);
    if (needsEveryInstanceOnAttestation(changes)) await this.capabilities.require('anonymousAttestation');
    if (changes.accessTokenFormat === 'jwt') await this.capabilities.require('jwtAccessTokens');
    const stamp = await this.events.stamp(appId, context);
    const changed: NewAuditEvent = { ...stamp, type: 'app.configuration_changed', details: { ...changes, ...developerDetails(context) } };
    const updated = await this.transactions.transaction(async (tx) => {
      const app = await tx.apps.updateConfiguration(appId, changes);
      if (app === undefined) throw appNotFound();
      await tx.events.append([changed]);
      return app;
    });
    this.onChange(appId);
    return describeApp(updated);
  }

  /**
   * Adds an origin to the app's allowed origins, the others kept; the list is read and written with
   * the app's row held, so that origins added at the same moment are all kept. `added` is false
   * when it was listed already. `invalid_request` when the list is full.
   */
  async allowOrigin(appId: string, origin: string, context: RequestContext): Promise<{ app: AppDescription; added: boolean }> {
    await this.access.authorize(appId, 'change_configuration', context);
    const stamp = await this.events.stamp(appId, context);
    // Read and written with the app's row held, so that an origin added meanwhile is not lost.
    const changed = await this.transactions.transaction(async (tx) => {
      const app = await tx.apps.findLocked(appId, 'NO KEY UPDATE');
      if (app === undefined) throw appNotFound();
      const { allowedOrigins } = app.configuration;
      if (allowedOrigins.includes(origin)) return { app, changed: false };
      if (allowedOrigins.length >= MAX_ALLOWED_ORIGINS) {
        throw new TesseraError(
          'invalid_request',
          `The app allows ${MAX_ALLOWED_ORIGINS} origins already, as many as it may: remove one in Settings first.`,
        );
      }
      const configuration = { ...app.configuration, allowedOrigins: [...allowedOrigins, origin] };
      await tx.apps.patchConfiguration(appId, { allowedOrigins: configuration.allowedOrigins });
      await tx.events.append([
        {
          ...stamp,
          type: 'app.configuration_changed',
          details: { allowedOrigins: configuration.allowedOrigins, ...developerDetails(context) },
        },
      ]);
      return { app: { ...app, configuration }, changed: true };
    });
    if (changed.changed) this.onChange(appId);
    return { app: describeApp(changed.app), added: changed.changed };
  }

  /**
   * Deletes the app with all of its tokens, events and members. Each member (the owner, the
   * collaborators) keeps a `developer.app_deleted` event in its account log, which outlives the app,
   * written with the deletion. Only the operator or the app's owner.
   */
  async delete(appId: string, context: RequestContext): Promise<void> {
    await this.access.authorize(appId, 'delete_app', context);
    const at = this.clock.now();
    await this.transactions.transaction(async (tx) => {
      const deleted = await tx.apps.delete(appId);
      if (deleted === undefined) throw appNotFound();
      // The app's own log goes with it; its members' account logs keep its deletion.
      await tx.developers.accounts.appendEvents(
        deleted.members.map(({ developerId, role }) => ({
          ...developerStamp(developerId, at, context),
          type: 'developer.app_deleted',
          details: { appId, name: deleted.app.name, role, ...developerDetails(context) },
        })),
      );
    });
    this.onChange(appId);
  }
}

function isoOrNull(instant: number | null): string | null {
  return instant === null ? null : new Date(instant).toISOString();
}

/**
 * The name without surrounding whitespace: 1 to `MAX_APP_NAME_LENGTH` characters, none of which can
 * rearrange what a terminal shows when the name is listed.
 */
export function checkedAppName(name: string): string {
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

/**
 * Whether a change asks for attestation or turns Basic anonymous access off: what an instance of a
 * release before 0.3.0 would not enforce, so it waits until every instance runs 0.3.0 or later.
 * Turning them off again never waits.
 */
function needsEveryInstanceOnAttestation(changes: Partial<AppConfiguration>): boolean {
  return (changes.anonymousAttestation !== undefined && changes.anonymousAttestation !== 'off') || changes.basicAnonymous === false;
}
