import { createHmac, createSecretKey, randomBytes, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * Secrets and tokens are stored as HMAC-SHA256 digests. They are generated with 256 bits of entropy,
 * so a fast hash is enough: inverting it by guessing is infeasible, and a slow password hash would
 * only slow down every request. The keys below separate the purposes (a token digest can never
 * match a secret digest); they are not secrets, because the security rests on the input's entropy.
 */
const HASH_KEYS = {
  accessToken: createSecretKey(Buffer.from('tessera/access-token/v1')),
  clientSecret: createSecretKey(Buffer.from('tessera/client-secret/v1')),
  comparison: createSecretKey(randomBytes(32)),
} satisfies Record<string, KeyObject>;

export type HashPurpose = keyof typeof HASH_KEYS;

export function keyedHash(purpose: HashPurpose, value: string): Buffer {
  return createHmac('sha256', HASH_KEYS[purpose]).update(value).digest();
}

/** Constant-time equality of two digests (different lengths are simply unequal). */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Constant-time equality of two strings of any length: both are hashed first, so neither the
 * position of the first difference nor the length of the expected value shows in the timing.
 */
export function stringsEqual(actual: string, expected: string): boolean {
  return timingSafeEqual(keyedHash('comparison', actual), keyedHash('comparison', expected));
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

export function randomBase64Url(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

export { randomUUID };
