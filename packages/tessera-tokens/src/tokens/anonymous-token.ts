import { createHmac, timingSafeEqual } from 'node:crypto';
import { ATTESTATION_PROVIDERS, type AttestationProvider } from '../principal.js';
import type { ActiveKey } from '../signing-keys/keyring.js';
import { fillRandom } from '../random-pool.js';

/**
 * An anonymous token is self-verifying: it carries what a check needs, under a MAC made with one of
 * the service's keys, so issuing one writes nothing and checking one reads nothing. 51 bytes,
 * base64url: 68 URL-safe characters (no padding bits, so each token has exactly one spelling).
 *
 * | bytes | what |
 * |---|---|
 * | 0 | format version, 1 |
 * | 1–2 | id of the key that made the MAC |
 * | 3–8 | issue time, UNIX ms |
 * | 9–16 | expiry, UNIX ms as a float64 (exact below 2⁵³), 0 for never |
 * | 17–32 | the token's id: 128 random bits (what revoking this one token keeps) |
 * | 33–50 | MAC: HMAC-SHA256 of the AppID, a 0 byte and bytes 0–32, cut to 144 bits |
 *
 * Format 2, for a token issued with an attestation, keeps the length: byte 33 is the attestation's
 * provider (1 + its index in `ATTESTATION_PROVIDERS`), under a MAC of 136 bits in bytes 34–50. A
 * release before 0.3.0 refuses format 2, so it is issued only once every instance runs 0.3.0 or
 * later (`src/upgrade/capabilities.ts`, `anonymousAttestation`).
 *
 * The AppID is under the MAC but not in the token: a token verifies in its own app only. Nothing in
 * it is secret; the MAC makes it unforgeable. Only anonymous tokens have this form; an admin token
 * is always a stored one (`token.ts`), so no key, leaked or not, can make an admin token.
 */
export const ANONYMOUS_TOKEN_LENGTH = 68;
const FORMAT_VERSION = 1;
const ATTESTED_FORMAT_VERSION = 2;
const SIGNED_BYTES = 33;
const ATTESTED_SIGNED_BYTES = 34;
const ID_OFFSET = 17;
const ID_BYTES = 16;
const TOKEN_BYTES = 51;
const ANONYMOUS_TOKEN_PATTERN = /^[A-Za-z0-9_-]{68}$/;

export interface AnonymousTokenFacts {
  keyId: number;
  /** UNIX ms. */
  issuedAt: number;
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
  /** The token's 16 random bytes, as a latin1 string: its id. */
  id: string;
  /** The provider of the attestation it was issued with, or null. */
  attestation: AttestationProvider | null;
}

export interface NewAnonymousToken {
  token: string;
  /** The token's id (latin1). */
  id: string;
}

export function signAnonymousToken(
  key: ActiveKey,
  appId: string,
  issuedAt: number,
  expiresAt: number | null,
  attestation: AttestationProvider | null = null,
): NewAnonymousToken {
  const bytes = Buffer.allocUnsafe(TOKEN_BYTES);
  bytes[0] = attestation === null ? FORMAT_VERSION : ATTESTED_FORMAT_VERSION;
  bytes.writeUInt16BE(key.id, 1);
  bytes.writeUIntBE(issuedAt, 3, 6);
  bytes.writeDoubleBE(expiresAt ?? 0, 9);
  fillRandom(bytes, ID_OFFSET, ID_BYTES);
  if (attestation !== null) bytes[SIGNED_BYTES] = ATTESTATION_PROVIDERS.indexOf(attestation) + 1;
  const signed = signedLength(bytes);
  mac(key, appId, bytes, signed).copy(bytes, signed, 0, TOKEN_BYTES - signed);
  return { token: bytes.toString('base64url'), id: bytes.toString('latin1', ID_OFFSET, ID_OFFSET + ID_BYTES) };
}

/** A presented token split into its parts, before its MAC is checked; undefined if it cannot be one. */
export interface PresentedAnonymousToken {
  facts: AnonymousTokenFacts;
  bytes: Buffer;
}

export function parseAnonymousToken(token: string): PresentedAnonymousToken | undefined {
  if (token.length !== ANONYMOUS_TOKEN_LENGTH || !ANONYMOUS_TOKEN_PATTERN.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64url');
  let attestation: AttestationProvider | null = null;
  if (bytes[0] === ATTESTED_FORMAT_VERSION) {
    const provider = ATTESTATION_PROVIDERS[bytes[SIGNED_BYTES]! - 1];
    if (provider === undefined) return undefined;
    attestation = provider;
  } else if (bytes[0] !== FORMAT_VERSION) return undefined;
  const expiresAt = bytes.readDoubleBE(9);
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) return undefined;
  return {
    bytes,
    facts: {
      keyId: bytes.readUInt16BE(1),
      issuedAt: bytes.readUIntBE(3, 6),
      expiresAt: expiresAt === 0 ? null : expiresAt,
      id: bytes.toString('latin1', ID_OFFSET, ID_OFFSET + ID_BYTES),
      attestation,
    },
  };
}

/** Whether the token's MAC is the one `key` makes for this app (constant time). */
export function anonymousTokenSignedBy(presented: PresentedAnonymousToken, key: ActiveKey, appId: string): boolean {
  const signed = signedLength(presented.bytes);
  const expected = mac(key, appId, presented.bytes, signed);
  return timingSafeEqual(expected.subarray(0, TOKEN_BYTES - signed), presented.bytes.subarray(signed));
}

function signedLength(bytes: Buffer): number {
  return bytes[0] === ATTESTED_FORMAT_VERSION ? ATTESTED_SIGNED_BYTES : SIGNED_BYTES;
}

function mac(key: ActiveKey, appId: string, bytes: Buffer, signed: number): Buffer {
  return createHmac('sha256', key.key).update(appId).update(ZERO).update(bytes.subarray(0, signed)).digest();
}

const ZERO = Buffer.alloc(1);
