import { randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_APP_CONFIGURATION, type AppRecord } from '../../src/apps/app.js';
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
    previousSecret: null,
    ...overrides,
  };
}

/** A `token.issued` event of the app at T0. */
export function makeEvent(appId: string, overrides: Partial<NewAuditEvent> = {}): NewAuditEvent {
  return { type: 'token.issued', appId, at: T0, principal: 'admin', clientAddress: '203.0.113.7', details: { expiresAt: null }, ...overrides };
}

/** An anonymous token of the app issued at T0 that never expires, with a random selector and verifier hash. */
export function makeToken(appId: string, overrides: Partial<TokenRecord> = {}): TokenRecord {
  return { selector: randomBytes(16), verifierHash: randomBytes(32), appId, kind: 'anonymous', issuedAt: T0, expiresAt: null, ...overrides };
}
