import type { Capabilities } from '../upgrade/capabilities.js';
import type { AppAccess } from '../app-access.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import {
  describeCredential,
  generateCredentialClientId,
  MAX_CREDENTIALS_PER_APP,
  type CredentialCreator,
  type CredentialDescription,
  type CredentialRecord,
} from 'tessera-tokens/internal/credentials/credential.js';
import { parseNewCredential, type NewCredentialFields } from '../credentials/input.js';
import { escapedLimit, limitsWithin, type EscapedLimit } from '../credentials/limits.js';
import type { CredentialStore } from '../credentials/store.js';
import type { EventStore } from '../events/store.js';
import { adminRequired, appNotFound, insufficientScope, notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { EventDetails, NewAuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import { claimOnce, onceClaim, type OnceClaimStore } from '../once-claims.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import { actingDetails, type RequestContext } from '../request-context.js';
import { generateClientSecret } from './secret-format.js';
import { checkedGraceSeconds } from './secret-rotation.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { AppRole } from '../developers/roles.js';
import type { AppStore } from './store.js';

/** A new credential, with its ClientSecret: shown this once, never stored. */
export interface CreatedCredential extends CredentialDescription {
  clientSecret: string;
}

export interface RotatedCredential {
  clientId: string;
  clientSecret: string;
  /** Until when the replaced secret keeps working (ISO 8601); null: it stopped at once. */
  previousSecretValidUntil: string | null;
}

export interface RevokedCredential {
  clientId: string;
  /** Admin tokens issued from it, removed with it. */
  tokensRevoked: number;
  /** The credentials its admin tokens made (and theirs made…), revoked with it: each with its tokens removed. */
  credentialsRevoked: { clientId: string; name: string; tokensRevoked: number }[];
}

/** The tables a credential's change is written to, in one transaction. */
export interface CredentialTables {
  readonly apps: AppStore;
  readonly credentials: CredentialStore;
  readonly events: EventStore;
  readonly onceClaims: OnceClaimStore;
}

/** The scopes a collaborator may not grant: they would let a credential do what the collaborator may not. */
const OWNER_ONLY_SCOPES: ReadonlySet<string> = new Set(['credentials:manage', 'webhooks:manage']);

/**
 * What the caller may do with an app's credentials besides listing, making and revoking them
 * (`CredentialService.permissions`): which scopes it may give a credential, and so which
 * credentials it may rotate, since a new secret hands over what the credential can do.
 */
export interface CredentialPermissions {
  mayGive(scope: string): boolean;
  /** Of `scopes`, those the caller may not give, in their order. */
  withheldFrom(scopes: readonly string[]): string[];
  mayRotate(credential: { readonly scopes: readonly string[] }): boolean;
}

function permissionsGiving(mayGive: (scope: string) => boolean): CredentialPermissions {
  const withheldFrom = (scopes: readonly string[]) => scopes.filter((scope) => !mayGive(scope));
  return { mayGive, withheldFrom, mayRotate: (credential) => withheldFrom(credential.scopes).length === 0 };
}

/** A developer gives any scope but `credentials:manage` and `webhooks:manage`, which only the owner gives. */
function developerPermissions(role: AppRole): CredentialPermissions {
  return permissionsGiving((scope) => role === 'owner' || !OWNER_ONLY_SCOPES.has(scope));
}

/**
 * An app's further credentials (docs/security.md, "Least privilege"): listed, created, rotated and
 * revoked by whoever may manage them (`manage_credentials`): the operator, the owner, a
 * collaborator, or an admin token with `credentials:manage`. No one grants more than it has: a
 * collaborator grants any scope but `credentials:manage` and `webhooks:manage`, and an admin token with scopes only its
 * own; rotating a credential hands over what it can do, so the same rule applies.
 */
export class CredentialService {
  constructor(
    private readonly store: Transactional<CredentialTables>,
    private readonly apps: AppStore,
    private readonly clock: Clock,
    private readonly events: EventLog,
    private readonly access: AppAccess,
    /** Whether every instance may honour credentials and grace periods (`src/upgrade/`). */
    private readonly capabilities: Capabilities,
    /** Called after a change, so that this process's caches drop the app at once. */
    private readonly onChange: (appId: string) => void = () => {},
  ) {}

  /** The app's credentials, oldest first, never a secret; read from the store, so that when each was last used is current. */
  async list(appId: string, context: RequestContext): Promise<CredentialDescription[]> {
    await this.access.authorize(appId, 'manage_credentials', context);
    return (await this.#credentialsOf(appId)).map(describeCredential);
  }

  /**
   * What whoever `context` names may do with the app's credentials (`CredentialPermissions`), once
   * it may manage them: the scopes it may give, and so the credentials it may rotate (the scopes of
   * an admin token's credential bound it; its expiry and addresses bound what it makes, see
   * `limitsWithin`). A developer's role is read once for the request (`AppAccess`).
   */
  async permissions(appId: string, context: RequestContext): Promise<CredentialPermissions> {
    await this.access.authorize(appId, 'manage_credentials', context);
    const { by } = context;
    if (by === 'operator') return permissionsGiving(() => true);
    if (by === null) throw adminRequired();
    if (by.kind === 'developer') {
      return developerPermissions(await this.access.authorizeDeveloper(appId, by.developerId, 'manage_credentials', context));
    }
    return permissionsGiving((scope) => by.scopes === null || by.scopes.includes(scope));
  }

  /** With `once` (a form's once value, `src/once-claims.ts`), made only if it claims it: `CONFLICT` if it was claimed before. */
  async create(appId: string, fields: NewCredentialFields, context: RequestContext, once?: string): Promise<CreatedCredential> {
    await this.access.authorize(appId, 'manage_credentials', context);
    const input = parseNewCredential(fields, this.clock.now());
    await this.capabilities.require('scopedCredentials');
    if (input.accessTokenFormat === 'jwt') await this.capabilities.require('jwtAccessTokens');
    if (input.scopes.includes('webhooks:manage')) await this.capabilities.require('webhooks');
    const app = await this.#app(appId);
    await this.#checkGrant(appId, input.scopes, context);
    const maker = makerOf(app, context);
    const limits = maker === null ? input : limitsWithin(input, maker);
    if ('escaped' in limits) throw limitEscaped(limits.escaped, maker!);
    const clientSecret = generateClientSecret();
    const stamp = await this.events.stamp(appId, context);
    const record: CredentialRecord = {
      clientId: generateCredentialClientId(),
      appId,
      name: input.name,
      scopes: input.scopes,
      expiresAt: limits.expiresAt,
      allowFrom: limits.allowFrom,
      secretHash: clientSecretDigest(clientSecret),
      previousSecret: null,
      createdAt: stamp.at,
      createdBy: creatorOf(context, app),
      lastUsedAt: null,
      accessTokenFormat: input.accessTokenFormat,
    };
    const created: NewAuditEvent = {
      ...stamp,
      type: 'credential.created',
      details: {
        ...credentialDetails(record),
        scopes: record.scopes,
        expiresAt: record.expiresAt,
        allowFrom: record.allowFrom,
        ...(record.accessTokenFormat === null ? {} : { accessTokenFormat: record.accessTokenFormat }),
        ...actingDetails(context),
      },
    };
    const claim = once === undefined ? undefined : onceClaim(once, stamp.at);
    await this.store.transaction(async (tx) => {
      // Creations for one app take turns (the app's row is held), so that several at once cannot
      // pass the limit together; tokens of the app are issued meanwhile.
      if ((await tx.apps.lock(appId, 'NO KEY UPDATE')) === undefined) throw appNotFound();
      if ((await tx.credentials.countOf(appId)) >= MAX_CREDENTIALS_PER_APP) {
        throw new TesseraError(
          'CONFLICT',
          `This app has ${MAX_CREDENTIALS_PER_APP} credentials, as many as an app may have; revoke one it no longer needs first.`,
        );
      }
      await claimOnce(tx.onceClaims, claim);
      await tx.credentials.insert(record);
      await tx.events.append([created]);
    });
    this.onChange(appId);
    return { ...describeCredential(record), clientSecret };
  }

  /**
   * A new secret for the credential; the old one stops at once, or with `graceSeconds` at the end of
   * that period. With `once`, as `create`.
   */
  async rotate(
    appId: string,
    clientId: string,
    options: { graceSeconds?: number; once?: string },
    context: RequestContext,
  ): Promise<RotatedCredential> {
    await this.access.authorize(appId, 'manage_credentials', context);
    const graceSeconds = options.graceSeconds === undefined ? null : checkedGraceSeconds(options.graceSeconds);
    if (graceSeconds !== null) await this.capabilities.require('secretGracePeriods');
    const app = await this.#app(appId);
    const credential = requireCredential(app, clientId);
    await this.#checkGrant(appId, credential.scopes, context);
    const maker = makerOf(app, context);
    const escaped = maker === null ? null : escapedLimit(credential, maker);
    if (escaped !== null) throw limitEscaped(escaped, maker!);
    const clientSecret = generateClientSecret();
    const stamp = await this.events.stamp(appId, context);
    const previousSecretValidUntil = graceSeconds === null ? null : stamp.at + graceSeconds * 1000;
    const claim = options.once === undefined ? undefined : onceClaim(options.once, stamp.at);
    await this.store.transaction(async (tx) => {
      const rotated = await tx.credentials.rotate(appId, clientId, clientSecretDigest(clientSecret), previousSecretValidUntil);
      if (rotated === undefined) throw credentialNotFound();
      await claimOnce(tx.onceClaims, claim);
      await tx.events.append([
        {
          ...stamp,
          type: 'credential.rotated',
          details: { ...credentialDetails(credential), previousSecretValidUntil, ...actingDetails(context) },
        },
      ]);
    });
    this.onChange(appId);
    return {
      clientId,
      clientSecret,
      previousSecretValidUntil: previousSecretValidUntil === null ? null : new Date(previousSecretValidUntil).toISOString(),
    };
  }

  /**
   * Ends the secret the credential's last rotation replaced, before its grace period is over
   * (`AppService.endPreviousSecret`). Returns the end it had (ISO 8601), or null when no previous
   * secret was working.
   */
  async endPreviousSecret(
    appId: string,
    clientId: string,
    context: RequestContext,
  ): Promise<{ clientId: string; endedPreviousSecretValidUntil: string | null }> {
    await this.access.authorize(appId, 'manage_credentials', context);
    const credential = await this.#require(appId, clientId);
    const stamp = await this.events.stamp(appId, context);
    const ended = await this.store.transaction(async (tx) => {
      const found = await tx.credentials.endPreviousSecret(appId, clientId, stamp.at);
      if (found === undefined) throw credentialNotFound();
      if (found.validUntil === null) return null;
      await tx.events.append([
        {
          ...stamp,
          type: 'credential.previous_secret_ended',
          details: { ...credentialDetails(credential), previousSecretValidUntil: found.validUntil, ...actingDetails(context) },
        },
      ]);
      return found.validUntil;
    });
    if (ended !== null) this.onChange(appId);
    return { clientId, endedPreviousSecretValidUntil: ended === null ? null : new Date(ended).toISOString() };
  }

  /**
   * Deletes the credential, and every credential its admin tokens made (which must not outlive it:
   * a leaked credential's revocation ends what it made too); every token issued from any of them is
   * refused at once. With `once`, as `create`.
   */
  async revoke(appId: string, clientId: string, context: RequestContext, once?: string): Promise<RevokedCredential> {
    await this.access.authorize(appId, 'manage_credentials', context);
    await this.#require(appId, clientId);
    const stamp = await this.events.stamp(appId, context);
    const claim = once === undefined ? undefined : onceClaim(once, stamp.at);
    const revoked = await this.store.transaction(async (tx) => {
      const credentials = await tx.credentials.delete(appId, clientId);
      if (credentials === undefined) throw credentialNotFound();
      await claimOnce(tx.onceClaims, claim);
      await tx.events.append(
        credentials.map(({ clientId: revokedId, name, madeBy, tokensRevoked }) => ({
          ...stamp,
          type: 'credential.revoked',
          details: {
            clientId: revokedId,
            name,
            tokensRevoked,
            ...(madeBy === null ? {} : { madeBy, revokedWith: clientId }),
            ...actingDetails(context),
          },
        })),
      );
      return credentials;
    });
    this.onChange(appId);
    const [named, ...made] = revoked;
    return {
      clientId,
      tokensRevoked: named!.tokensRevoked,
      credentialsRevoked: made.map(({ clientId: madeId, name, tokensRevoked }) => ({ clientId: madeId, name, tokensRevoked })),
    };
  }

  async #app(appId: string): Promise<AppRecord> {
    const app = await this.apps.findById(appId);
    if (app === undefined) throw appNotFound();
    return app;
  }

  async #credentialsOf(appId: string): Promise<readonly CredentialRecord[]> {
    return (await this.#app(appId)).credentials;
  }

  async #require(appId: string, clientId: string): Promise<CredentialRecord> {
    return requireCredential(await this.#app(appId), clientId);
  }

  /**
   * Throws unless whoever asks may hand over `scopes` (see the class's comment). The operator hands
   * over any scope unchecked; a context that names nobody hands over none, never taken for the operator.
   */
  async #checkGrant(appId: string, scopes: readonly string[], context: RequestContext): Promise<void> {
    const { by } = context;
    if (by === 'operator') return;
    if (by === null) throw adminRequired();
    if (by.kind === 'developer') {
      const role = await this.access.authorizeDeveloper(appId, by.developerId, 'manage_credentials', context);
      const withheld = developerPermissions(role).withheldFrom(scopes)[0];
      if (withheld !== undefined) {
        throw new TesseraError('FORBIDDEN', `Only the app\u2019s owner may give a credential ${withheld}.`, { field: 'scopes' });
      }
      return;
    }
    const missing = by.scopes === null ? undefined : scopes.find((scope) => !by.scopes!.includes(scope));
    if (missing !== undefined) throw insufficientScope(missing);
  }
}

function requireCredential(app: AppRecord, clientId: string): CredentialRecord {
  const credential = app.credentials.find((candidate) => candidate.clientId === clientId);
  if (credential === undefined) throw credentialNotFound();
  return credential;
}

/**
 * The credential whose admin token asks (with `credentials:manage`), whose limits bound what it
 * makes and hands over (`limitsWithin`); null for anyone else (the operator, a developer, a token of
 * the app's own ClientID).
 */
function makerOf(app: AppRecord, context: RequestContext): CredentialRecord | null {
  const { by } = context;
  if (by === null || by === 'operator' || by.kind !== 'admin' || by.clientId === null) return null;
  const maker = app.credentials.find((credential) => credential.clientId === by.clientId);
  if (maker === undefined) throw new TesseraError('FORBIDDEN', 'The credential this admin token was issued from has been revoked.');
  return maker;
}

function limitEscaped(limit: EscapedLimit, maker: CredentialRecord): TesseraError {
  const what =
    limit === 'expiresAt'
      ? `expire no later than it does (${new Date(maker.expiresAt!).toISOString()})`
      : `be used only from addresses on its own list (${maker.allowFrom.join(', ')})`;
  return new TesseraError(
    'FORBIDDEN',
    `${limit} goes beyond the credential this admin token was issued from: what a credential makes or rotates must ${what}.`,
  );
}

function credentialNotFound(): TesseraError {
  const error = notFound();
  return new TesseraError(error.code, 'This app has no credential with this ClientID.');
}

/** Who made the credential; never the operator for a context that names nobody (refused by `#checkGrant` before). */
function creatorOf(context: RequestContext, app: AppRecord): CredentialCreator {
  const { by } = context;
  if (by === 'operator') return { kind: 'operator' };
  if (by === null) throw adminRequired();
  if (by.kind === 'developer') return { kind: 'developer', developerId: by.developerId };
  return { kind: 'admin', clientId: by.clientId ?? app.clientId };
}

/** What names a credential in its events: its ClientID and name, never its secret. */
function credentialDetails(credential: CredentialRecord): EventDetails {
  return { clientId: credential.clientId, name: credential.name };
}
