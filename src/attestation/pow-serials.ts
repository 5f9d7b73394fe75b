import { SERIALS_PER_BLOCK } from './store.js';
import { CHALLENGE_LIFETIME_MS } from './pow.js';

/** How long an instance makes challenges from one block of serials before it reserves another. */
export const BLOCK_USE_MS = 60_000;
/** How long a block is kept after its last challenge expired: room for instances' clocks that disagree. */
const CLOCK_SLACK_MS = 60_000;

interface Block {
  next: number;
  end: number;
  /** UNIX ms: challenges made from then on take a serial of a new block. */
  usableUntil: number;
}

/**
 * The serials this instance gives its challenges of a proof of work (`data.serial`), from blocks of
 * `SERIALS_PER_BLOCK` it reserves in the store. A proof is claimed by setting its serial's bit, so
 * that the claims of a burst, whose challenges were made one after the other, share a row or two of
 * the store where a row each scattered them among as many pages (docs/benchmarks.md, "Attestation").
 *
 * A block serves for `BLOCK_USE_MS` at most, so that it expires (and is deleted) once its last
 * challenge has: a serial an instance never used costs nothing, and someone asking for challenges
 * without end makes one 512-byte row per 4096 of them, deleted minutes later.
 */
export class PowSerials {
  #block: Block | undefined;
  #reserving: Promise<Block> | undefined;

  constructor(
    /** Reserves a block whose challenges all expire by `expiresAt` (`AttestationStore.reserveSerials`): its id. */
    private readonly reserve: (expiresAt: number) => Promise<number>,
  ) {}

  /** The serial of a challenge made at `now`: the next of the current block, or the first of a new one. */
  async next(now: number): Promise<number> {
    for (;;) {
      const block = this.#block;
      if (block !== undefined && block.next < block.end && now < block.usableUntil) return block.next++;
      // Requests that find the block used up share one reservation.
      this.#block = await (this.#reserving ??= this.#reserveBlock(now));
    }
  }

  async #reserveBlock(now: number): Promise<Block> {
    try {
      const usableUntil = now + BLOCK_USE_MS;
      const id = await this.reserve(usableUntil + CHALLENGE_LIFETIME_MS + CLOCK_SLACK_MS);
      return { next: id * SERIALS_PER_BLOCK, end: (id + 1) * SERIALS_PER_BLOCK, usableUntil };
    } finally {
      this.#reserving = undefined;
    }
  }
}
