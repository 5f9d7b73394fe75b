import { cidrWithin } from './addresses.js';
import type { CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';

/** What a credential is limited to besides its scopes: until when, and from where. */
export type CredentialLimits = Pick<CredentialRecord, 'expiresAt' | 'allowFrom'>;

/** Which limit a credential would escape: the field that says so. */
export type EscapedLimit = 'expiresAt' | 'allowFrom';

/**
 * The limits of a credential made with a token of `maker` (a credential with `credentials:manage`):
 * what the request leaves open is `maker`'s (no expiry asked: `maker`'s; no addresses: `maker`'s list),
 * so that a credential never makes one less limited than itself; what the request asks must be
 * within `maker`'s limits, or the limit it would escape is named.
 */
export function limitsWithin(asked: CredentialLimits, maker: CredentialLimits): CredentialLimits | { escaped: EscapedLimit } {
  const limits: CredentialLimits = {
    expiresAt: asked.expiresAt ?? maker.expiresAt,
    allowFrom: asked.allowFrom.length === 0 ? maker.allowFrom : asked.allowFrom,
  };
  const escaped = escapedLimit(limits, maker);
  return escaped === null ? limits : { escaped };
}

/**
 * The first limit of `maker` that `limits` escapes: an expiry later than `maker`'s (or none where
 * `maker` has one), an address that `maker`'s list does not cover (or any address where it has one);
 * null when `limits` are within `maker`'s.
 */
export function escapedLimit(limits: CredentialLimits, maker: CredentialLimits): EscapedLimit | null {
  if (maker.expiresAt !== null && (limits.expiresAt === null || limits.expiresAt > maker.expiresAt)) return 'expiresAt';
  if (maker.allowFrom.length > 0) {
    if (limits.allowFrom.length === 0) return 'allowFrom';
    if (!limits.allowFrom.every((cidr) => maker.allowFrom.some((outer) => cidrWithin(cidr, outer)))) return 'allowFrom';
  }
  return null;
}
