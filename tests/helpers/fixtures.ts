import { randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_APP_CONFIGURATION, type AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';
import type { DeveloperRecord } from '../../src/developers/developer.js';
import type { OneTimeLinkRecord } from '../../src/developers/one-time-link.js';
import type { SessionRecord } from '../../src/developers/session.js';
import type { NewAuditEvent } from '../../src/events/event.js';
import type { TokenRecord } from '../../src/tokens/store.js';

// Records as a store holds them, for tests that write to a store directly rather than through the
// services: each one valid and distinct, with what a test cares about given as overrides.

/** The instant fixtures are stamped with (the fake clock's default start too). */
export const T0 = Date.parse('2026-06-01T00:00:00.000Z');

let sequence = 0;

/** A new app record with fresh keys, named and created one millisecond after the previous one. */
export function makeApp(overrides: Partial<AppRecord> = {}): AppRecord {
  sequence++;
  return {
    appId: randomBytes(8).toString('hex'),
    name: `app ${sequence}`,
    appKey: randomBytes(16).toString('hex'),
    clientId: randomBytes(16).toString('hex'),
    clientSecretHash: randomBytes(32),
    adminId: randomUUID(),
    createdAt: T0 + sequence,
    configuration: { ...DEFAULT_APP_CONFIGURATION },
    anonymousCutoff: null,
    adminGeneration: 0,
    previousSecret: null,
    credentials: [],
    ...overrides,
  };
}

/** A `token.issued` event of the app at T0. */
export function makeEvent(appId: string, overrides: Partial<NewAuditEvent> = {}): NewAuditEvent {
  return {
    type: 'token.issued',
    appId,
    at: T0,
    principal: 'admin',
    clientAddress: '203.0.113.7',
    details: { expiresAt: null },
    ...overrides,
  };
}

/** An anonymous token of the app issued at T0 that never expires, with a random selector and verifier hash. */
export function makeToken(appId: string, overrides: Partial<TokenRecord> = {}): TokenRecord {
  return {
    selector: randomBytes(16),
    verifierHash: randomBytes(32),
    appId,
    kind: 'anonymous',
    issuedAt: T0,
    expiresAt: null,
    clientId: null,
    scopes: null,
    ...overrides,
  };
}

/** A new enabled developer with a unique email and a placeholder password hash (stores do not read it). */
export function makeDeveloper(overrides: Partial<DeveloperRecord> = {}): DeveloperRecord {
  sequence++;
  return {
    id: randomUUID(),
    email: `developer-${sequence}-${randomBytes(4).toString('hex')}@example.com`,
    passwordHash: `$argon2id$v=19$m=19456,t=2,p=1$${randomBytes(16).toString('base64').replace(/=+$/, '')}$${randomBytes(32).toString('base64').replace(/=+$/, '')}`,
    createdAt: T0 + sequence,
    disabledAt: null,
    emailConfirmedAt: null,
    ...overrides,
  };
}

/** A session of the developer started at T0, with the lifetimes of `session.ts`. */
export function makeSession(developerId: string, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: randomBytes(16).toString('base64url'),
    secretHash: randomBytes(32),
    developerId,
    createdAt: T0,
    lastSeenAt: T0,
    expiresAt: T0 + 30 * 60_000,
    ...overrides,
  };
}

/** A reset link of the developer made at T0 that expires a day later. */
export function makePasswordLink(developerId: string, overrides: Partial<OneTimeLinkRecord> = {}): OneTimeLinkRecord {
  return {
    id: randomBytes(16).toString('base64url'),
    secretHash: randomBytes(32),
    purpose: 'reset_password',
    developerId,
    appId: null,
    email: null,
    invitedBy: null,
    createdAt: T0,
    expiresAt: T0 + 86_400_000,
    ...overrides,
  };
}

/** An invitation to the app for `email`, made by the operator at T0, that expires a week later. */
export function makeInvitation(appId: string, email: string, overrides: Partial<OneTimeLinkRecord> = {}): OneTimeLinkRecord {
  return makePasswordLink('', { purpose: 'invitation', developerId: null, appId, email, expiresAt: T0 + 7 * 86_400_000, ...overrides });
}

/** A credential of the app made by the operator at T0, with a random ClientID and secret hash, scoped to `events:read`. */
export function makeCredential(appId: string, overrides: Partial<CredentialRecord> = {}): CredentialRecord {
  return {
    clientId: `tcl_${randomBytes(12).toString('hex')}`,
    appId,
    name: `credential ${++sequence}`,
    scopes: ['events:read'],
    expiresAt: null,
    allowFrom: [],
    secretHash: randomBytes(32),
    previousSecret: null,
    createdAt: T0,
    createdBy: { kind: 'operator' },
    lastUsedAt: null,
    accessTokenFormat: null,
    ...overrides,
  };
}
