import { createHmac, createSecretKey, hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * ClientSecrets are stored as HMAC-SHA256 digests. They carry 256 bits of entropy, so a fast keyed
 * hash is enough: inverting it by guessing is infeasible, and a slow password hash would only slow
 * down every admin-token request. The key separates this purpose from any other use of SHA-256; it
 * is not a secret, because the security rests on the input's entropy.
 */
const CLIENT_SECRET_KEY = createSecretKey(Buffer.from('tessera/client-secret/v1'));

export function clientSecretDigest(clientSecret: string): Buffer {
  return createHmac('sha256', CLIENT_SECRET_KEY).update(clientSecret).digest();
}

/** One-shot SHA-256 (for the random verifier part of access tokens: 128 random bits need no key). */
export function sha256(data: Buffer): Buffer {
  return hash('sha256', data, 'buffer');
}

/** Constant-time equality of two digests (different lengths are simply unequal). */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Constant-time equality of bytes and a latin1 string of bytes: how the token cache keeps a verifier,
 * since a 16-character string takes about 30 bytes of heap and a Buffer of its own over 200. No
 * branch depends on the bytes, so only the length, public, shows in the timing.
 */
export function bytesEqualLatin1(bytes: Buffer, latin1: string): boolean {
  if (bytes.length !== latin1.length) return false;
  let difference = 0;
  for (let i = 0; i < bytes.length; i++) difference |= bytes[i]! ^ latin1.charCodeAt(i);
  return difference === 0;
}

/**
 * Constant-time equality of a presented credential and the expected one. Only the length can show
 * in the timing, and every credential of a kind has the same, public, length. No branch depends on
 * the characters, and nothing is allocated (this runs on every admin-token request).
 */
export function credentialsEqual(presented: string, expected: string): boolean {
  if (presented.length !== expected.length) return false;
  let difference = 0;
  for (let i = 0; i < presented.length; i++) difference |= presented.charCodeAt(i) ^ expected.charCodeAt(i);
  return difference === 0;
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

export { randomUUID };
