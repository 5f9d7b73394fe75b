import { randomBytes } from 'node:crypto';

/** 32 random bytes, base64url: 43 URL-safe characters, 256 bits of entropy. */
export const ACCESS_TOKEN_LENGTH = 43;
const TOKEN_BYTES = 32;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]+$/;

/**
 * Tokens are issued at a high rate; one `randomBytes` call per batch of tokens instead of one per
 * token saves a system call on the hot path. Each slice is used exactly once.
 */
const POOL_TOKENS = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

export function generateAccessToken(): string {
  if (poolOffset >= pool.length) {
    pool = randomBytes(TOKEN_BYTES * POOL_TOKENS);
    poolOffset = 0;
  }
  const token = pool.toString('base64url', poolOffset, poolOffset + TOKEN_BYTES);
  pool.fill(0, poolOffset, poolOffset + TOKEN_BYTES);
  poolOffset += TOKEN_BYTES;
  return token;
}

/** Cheap shape check, so that garbage never reaches a hash or the store. */
export function isWellFormedAccessToken(value: string): boolean {
  return value.length === ACCESS_TOKEN_LENGTH && TOKEN_PATTERN.test(value);
}
