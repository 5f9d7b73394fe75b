import { randomBytes } from 'node:crypto';

/**
 * Tokens are issued at a high rate; one `randomBytes` call per batch of tokens instead of one per
 * token saves a system call on the hot path. Each slice is used exactly once, then zeroed.
 */
const POOL_BYTES = 8192;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/** Writes `length` fresh random bytes into `target` at `offset`. */
export function fillRandom(target: Buffer, offset: number, length: number): void {
  if (poolOffset + length > pool.length) {
    pool = randomBytes(Math.max(POOL_BYTES, length));
    poolOffset = 0;
  }
  pool.copy(target, offset, poolOffset, poolOffset + length);
  pool.fill(0, poolOffset, poolOffset + length);
  poolOffset += length;
}
