import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ActiveKey } from '../signing-keys/keyring.js';
import { fillRandom } from './random-pool.js';

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
 * The AppID is under the MAC but not in the token: a token verifies in its own app only. Nothing in
 * it is secret; the MAC makes it unforgeable. Only anonymous tokens have this form; an admin token
 * is always a stored one (`token.ts`), so no key, leaked or not, can make an admin token.
 */
export const ANONYMOUS_TOKEN_LENGTH = 68;
const FORMAT_VERSION = 1;
const SIGNED_BYTES = 33;
const ID_OFFSET = 17;
const ID_BYTES = 16;
const MAC_BYTES = 18;
const TOKEN_BYTES = SIGNED_BYTES + MAC_BYTES;
const ANONYMOUS_TOKEN_PATTERN = /^[A-Za-z0-9_-]{68}$/;

export interface AnonymousTokenFacts {
  keyId: number;
  /** UNIX ms. */
  issuedAt: number;
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
  /** The token's 16 random bytes, as a latin1 string: its id. */
  id: string;
}

export interface NewAnonymousToken {
  token: string;
  /** The token's id (latin1). */
  id: string;
}

export function signAnonymousToken(key: ActiveKey, appId: string, issuedAt: number, expiresAt: number | null): NewAnonymousToken {
  const bytes = Buffer.allocUnsafe(TOKEN_BYTES);
  bytes[0] = FORMAT_VERSION;
  bytes.writeUInt16BE(key.id, 1);
  bytes.writeUIntBE(issuedAt, 3, 6);
  bytes.writeDoubleBE(expiresAt ?? 0, 9);
  fillRandom(bytes, ID_OFFSET, ID_BYTES);
  mac(key, appId, bytes).copy(bytes, SIGNED_BYTES, 0, MAC_BYTES);
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
  if (bytes[0] !== FORMAT_VERSION) return undefined;
  const expiresAt = bytes.readDoubleBE(9);
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) return undefined;
  return {
    bytes,
    facts: {
      keyId: bytes.readUInt16BE(1),
      issuedAt: bytes.readUIntBE(3, 6),
      expiresAt: expiresAt === 0 ? null : expiresAt,
      id: bytes.toString('latin1', ID_OFFSET, ID_OFFSET + ID_BYTES),
    },
  };
}

/** Whether the token's MAC is the one `key` makes for this app (constant time). */
export function anonymousTokenSignedBy(presented: PresentedAnonymousToken, key: ActiveKey, appId: string): boolean {
  const expected = mac(key, appId, presented.bytes);
  return timingSafeEqual(expected.subarray(0, MAC_BYTES), presented.bytes.subarray(SIGNED_BYTES));
}

function mac(key: ActiveKey, appId: string, bytes: Buffer): Buffer {
  return createHmac('sha256', key.key).update(appId).update(ZERO).update(bytes.subarray(0, SIGNED_BYTES)).digest();
}

const ZERO = Buffer.alloc(1);
