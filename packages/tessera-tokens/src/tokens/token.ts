import { sha256 } from '../crypto.js';
import { fillRandom } from '../random-pool.js';

/**
 * A stored token (every admin token, and anonymous tokens issued before they became self-verifying;
 * see `anonymous-token.ts`) is 32 bytes, base64url: 43 URL-safe characters.
 * - bytes 0–15, the selector: the token's key in the store. A 6-byte millisecond timestamp then 10
 *   random bytes, so that new tokens land at the end of the store's index (cheap inserts at any
 *   size) and never collide. Not secret: it only says when the token was issued.
 * - bytes 16–31, the verifier: 128 random bits, stored only as their SHA-256 and compared in
 *   constant time. A leaked store therefore holds no usable token.
 */
export const ACCESS_TOKEN_LENGTH = 43;
const TOKEN_BYTES = 32;
const SELECTOR_BYTES = 16;
const TIME_BYTES = 6;
const RANDOM_BYTES_PER_TOKEN = TOKEN_BYTES - TIME_BYTES;
// 43 characters carry 258 bits for 256: the last character's two low bits are padding and must be
// zero, so that each token has exactly one spelling.
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

export interface NewAccessToken {
  /** What the client gets. */
  token: string;
  selector: Buffer;
  verifierHash: Buffer;
}

export interface PresentedAccessToken {
  selector: Buffer;
  /** The 16 random bytes; hash them (`sha256`) to compare with a stored token. */
  verifier: Buffer;
}

export function generateAccessToken(now: number): NewAccessToken {
  const bytes = Buffer.allocUnsafe(TOKEN_BYTES);
  bytes.writeUIntBE(now, 0, TIME_BYTES);
  fillRandom(bytes, TIME_BYTES, RANDOM_BYTES_PER_TOKEN);
  return {
    token: bytes.toString('base64url'),
    selector: bytes.subarray(0, SELECTOR_BYTES),
    verifierHash: sha256(bytes.subarray(SELECTOR_BYTES)),
  };
}

/** Splits a presented token; undefined when it cannot be one (checked before any lookup). */
export function parseAccessToken(token: string): PresentedAccessToken | undefined {
  if (token.length !== ACCESS_TOKEN_LENGTH || !TOKEN_PATTERN.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64url');
  return { selector: bytes.subarray(0, SELECTOR_BYTES), verifier: bytes.subarray(SELECTOR_BYTES) };
}
