import { randomBytes, randomUUID } from 'node:crypto';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { sha256 } from 'tessera-tokens/internal/crypto.js';
import { appNotFound, notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { AppAccess } from '../app-access.js';
import type { EventLog } from '../events/log.js';
import { developerDetails, type RequestContext } from '../request-context.js';
import { claimOnce, onceClaim, type OnceClaimStore } from '../once-claims.js';
import type { AppStore } from '../apps/store.js';
import type { EventStore } from '../events/store.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import type { AttestationStore, DebugTokenRecord } from './store.js';

/** The tables a debug token's change is written to, in one transaction. */
export interface DebugTokenTables {
  readonly apps: AppStore;
  readonly attestation: AttestationStore;
  readonly events: EventStore;
  readonly onceClaims: OnceClaimStore;
}

/** Debug tokens one app may have: enough for every CI pipeline and emulator of a team. */
export const MAX_DEBUG_TOKENS_PER_APP = 50;
export const MAX_DEBUG_TOKEN_NAME_LENGTH = 100;
/** `tdbg_` and 43 characters of base64url (256 random bits). */
const DEBUG_TOKEN = /^tdbg_[A-Za-z0-9_-]{43}$/;

/** What is shown of a debug token: never its value, which only its creation answers. */
export interface DebugTokenDescription {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface CreatedDebugToken extends DebugTokenDescription {
  /** The token itself: in this answer only. */
  token: string;
}

export function describeDebugToken(record: DebugTokenRecord): DebugTokenDescription {
  return {
    id: record.id,
    name: record.name,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUsedAt: record.lastUsedAt === null ? null : new Date(record.lastUsedAt).toISOString(),
  };
}

/**
 * Attestation debug tokens (the `debug` provider), for CI and emulators, where no platform can
 * attest: a developer makes one in the portal or the CLI, sees it once, and puts it where the app's
 * tests run. Unlike a proof of work, one is used again and again until it is revoked: it is a secret
 * of the developer's, kept only as its SHA-256.
 */
export class DebugTokens {
  constructor(
    private readonly store: Transactional<DebugTokenTables> & Pick<DebugTokenTables, 'apps' | 'attestation'>,
    private readonly clock: Clock,
    private readonly events: EventLog,
    private readonly access: AppAccess,
    private readonly onWarning: (message: string, error: unknown) => void,
  ) {}

  /** With `once` (the portal's single-use form value), a form sent twice makes one token (`src/once-claims.ts`). */
  async create(appId: string, name: string, context: RequestContext, once?: string): Promise<CreatedDebugToken> {
    await this.access.authorize(appId, 'change_configuration', context);
    const checkedName = checkName(name);
    const token = `tdbg_${randomBytes(32).toString('base64url')}`;
    const stamp = await this.events.stamp(appId, context);
    const record: DebugTokenRecord = {
      id: randomUUID(),
      appId,
      name: checkedName,
      tokenHash: sha256(Buffer.from(token)),
      createdAt: stamp.at,
      lastUsedAt: null,
    };
    await this.store.transaction(async (tx) => {
      if ((await tx.apps.lock(appId, 'NO KEY UPDATE')) === undefined) throw appNotFound();
      if ((await tx.attestation.countDebugTokens(appId)) >= MAX_DEBUG_TOKENS_PER_APP) {
        throw new TesseraError(
          'CONFLICT',
          `This app has ${MAX_DEBUG_TOKENS_PER_APP} debug tokens, as many as an app may have; revoke one it no longer needs first.`,
        );
      }
      await claimOnce(tx.onceClaims, once === undefined ? undefined : onceClaim(once, stamp.at));
      await tx.attestation.insertDebugToken(record);
      await tx.events.append([
        {
          ...stamp,
          type: 'app.configuration_changed',
          details: { debugTokenCreated: record.name, debugTokenId: record.id, ...developerDetails(context) },
        },
      ]);
    });
    return { ...describeDebugToken(record), token };
  }

  async list(appId: string, context: RequestContext): Promise<DebugTokenDescription[]> {
    await this.access.authorize(appId, 'view_configuration', context);
    if ((await this.store.apps.findById(appId)) === undefined) throw appNotFound();
    return (await this.store.attestation.debugTokensOf(appId)).map(describeDebugToken);
  }

  async revoke(appId: string, id: string, context: RequestContext): Promise<DebugTokenDescription> {
    await this.access.authorize(appId, 'change_configuration', context);
    const stamp = await this.events.stamp(appId, context);
    const removed = await this.store.transaction(async (tx) => {
      const record = await tx.attestation.deleteDebugToken(appId, id);
      if (record === undefined) throw notFound();
      await tx.events.append([
        {
          ...stamp,
          type: 'app.configuration_changed',
          details: { debugTokenRevoked: record.name, debugTokenId: record.id, ...developerDetails(context) },
        },
      ]);
      return record;
    });
    return describeDebugToken(removed);
  }

  /** Whether `payload` is one of the app's debug tokens: read from the store each time, so that a revocation holds at once everywhere. */
  async verify(app: AppRecord, payload: string): Promise<boolean> {
    if (!DEBUG_TOKEN.test(payload)) return false;
    const found = await this.store.attestation.findDebugToken(app.appId, sha256(Buffer.from(payload)));
    if (found === undefined) return false;
    this.store.attestation
      .touchDebugToken(found.id, this.clock.now())
      .catch((error: unknown) => this.onWarning('when a debug token was last used could not be written', error));
    return true;
  }
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_DEBUG_TOKEN_NAME_LENGTH || /[\p{Cc}]/u.test(name)) {
    throw new TesseraError(
      'invalid_request',
      `A debug token needs a name of 1 to ${MAX_DEBUG_TOKEN_NAME_LENGTH} characters, with no control characters.`,
    );
  }
  return name.trim();
}
