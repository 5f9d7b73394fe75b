import type { EventDetails, EventStamp, NewAuditEvent } from '../events/event.js';
import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';
import { developerDetails, type RequestContext } from '../request-context.js';

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

/**
 * The `token.revoked` event of a revoke-all that removed `count` stored tokens; with anonymous
 * tokens, which are not stored (so not counted), also the cut-off that ends them all (UNIX ms).
 */
export function appTokensRevoked(
  stamp: EventStamp,
  kind: RevocationKind,
  count: number,
  context: RequestContext,
  anonymousCutoff: number | null = null,
): NewAuditEvent {
  const details: EventDetails = { kind, scope: 'app', count };
  if (anonymousCutoff !== null) details.anonymousCutoff = anonymousCutoff;
  return { ...stamp, type: 'token.revoked', details: { ...details, ...developerDetails(context) } };
}
