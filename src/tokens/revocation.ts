import type { EventStamp, NewAuditEvent } from '../events/event.js';
import type { PrincipalKind } from '../principal.js';

/** Which of an app's tokens a revoke-all removes: one kind, or `all`, always spelled out. */
export type RevocationKind = PrincipalKind | 'all';

export const REVOCATION_KINDS: readonly RevocationKind[] = ['admin', 'anonymous', 'all'];

/**
 * The kind of a revoke-all (`DELETE …/tokens?kind=`, `tessera tokens revoke-all --kind`), exactly as
 * spelled, or undefined for anything else: no default, no case folding. A typo or an unset variable
 * must never read as "all".
 */
export function revocationKind(value: unknown): RevocationKind | undefined {
  return REVOCATION_KINDS.find((kind) => kind === value);
}

/** The `token.revoked` event of a revoke-all that removed `count` tokens. */
export function appTokensRevoked(stamp: EventStamp, kind: RevocationKind, count: number): NewAuditEvent {
  return { ...stamp, type: 'token.revoked', details: { kind, scope: 'app', count } };
}
