import { deflateSync } from 'node:zlib';
import { LRUCache } from 'lru-cache';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { MAX_JWT_LIFETIME_MS, signJwt, STATUS_LIST_TYPE } from 'tessera-tokens/internal/jwt/access-token.js';
import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';
import type { JwtKeyService } from './keys.js';
import type { StatusListStore } from './store.js';

/** Indexes per list: 2¹⁷, 16 KiB of bits before compression (a list with few revocations compresses to tens of bytes). */
export const STATUS_LIST_SIZE = 2 ** 17;
/** How long a status list may be cached by a verifier (`ttl`, and `Cache-Control: max-age`), by default. */
export const DEFAULT_STATUS_LIST_TTL_SECONDS = 60;
/** How long an instance serves a list it built before building it again. */
const REBUILD_AFTER_MS = 1_000;
const FIRST_BLOCK_SIZE = 64;
const LARGEST_BLOCK_SIZE = 4_096;
/** How long an instance gives indexes from one block: after it, a new block (so that a block's last token expires a day later at most). */
const BLOCK_USE_MS = 3_600_000;
const MAX_OPEN_BLOCKS = 100_000;
const MAX_BUILT_LISTS = 10_000;

interface OpenBlock {
  next: number;
  end: number;
  size: number;
  reservedAt: number;
  usableUntil: number;
}

/**
 * Token Status Lists (draft-ietf-oauth-status-list): every JWT access token gets an index, and its
 * bit is set when it is revoked. An instance reserves indexes in blocks per app and kind (one write
 * for 64 to 4,096 tokens), so issuing a token writes nothing of its own; a block whose app is
 * deleted, or an anonymous block reserved before a revoke-all of the app's anonymous tokens, counts
 * as revoked whole; single tokens are revoked one by one (an admin token's row deleted, by any
 * release: the database's trigger; an anonymous one by RFC 7009). A list is served as a
 * `statuslist+jwt` signed with the JWKS's keys, built at most once a second per instance.
 */
export class StatusLists {
  /** The blocks this instance gives indexes from, by app and kind: the busiest apps' (a forgotten one's indexes go unused). */
  readonly #blocks = new LRUCache<string, OpenBlock>({ max: MAX_OPEN_BLOCKS });
  readonly #reserving = new Map<string, Promise<OpenBlock>>();
  /** The lists built lately, by number: the ones verifiers ask for now. */
  readonly #built = new LRUCache<number, { token: string; at: number }>({ max: MAX_BUILT_LISTS });

  constructor(
    private readonly store: StatusListStore,
    private readonly clock: Clock,
    private readonly keys: JwtKeyService,
    readonly ttlSeconds: number = DEFAULT_STATUS_LIST_TTL_SECONDS,
  ) {}

  /** An index for a new token of the app and kind. */
  async index(app: AppRecord, kind: PrincipalKind): Promise<number> {
    const key = `${kind}:${app.appId}`;
    for (;;) {
      const block = this.#blocks.get(key);
      if (block !== undefined && usable(block, app, kind, this.clock.now())) return block.next++;
      // Requests waiting for the same block share its reservation; the ones it is too small for reserve the next.
      await this.#reserve(key, app, kind, block?.size);
    }
  }

  /** The URI of the list that holds `index`, and the index within it. */
  reference(baseUrl: string, index: number): { idx: number; uri: string } {
    return { idx: index % STATUS_LIST_SIZE, uri: listUri(baseUrl, Math.floor(index / STATUS_LIST_SIZE)) };
  }

  /** The index a token's `status.status_list` names, if it names one of this service's lists (`/status-lists/{list}`). */
  indexOf(reference: { idx: number; uri: string }): number | undefined {
    const list = /\/api\/status-lists\/(\d{1,9})$/.exec(reference.uri)?.[1];
    if (list === undefined || reference.idx >= STATUS_LIST_SIZE) return undefined;
    return Number(list) * STATUS_LIST_SIZE + reference.idx;
  }

  /** Sets a token's bit, until it expires. */
  revoke(index: number, expiresAt: number): Promise<void> {
    return this.store.revokeIndex(index, expiresAt);
  }

  /** The list's `statuslist+jwt`, or undefined when no token of it can still be valid. */
  async token(baseUrl: string, list: number): Promise<string | undefined> {
    const built = this.#built.get(list);
    const now = this.clock.now();
    if (built !== undefined && now - built.at < REBUILD_AFTER_MS) return built.token;
    const from = list * STATUS_LIST_SIZE;
    const contents = await this.store.contents(from, from + STATUS_LIST_SIZE, now);
    if (!contents.inUse && contents.revokedIndexes.length === 0) return undefined;
    const bits = Buffer.alloc(STATUS_LIST_SIZE / 8);
    const set = (index: number) => (bits[(index - from) >> 3]! |= 1 << ((index - from) & 7));
    for (const block of contents.revokedBlocks)
      for (let index = block.firstIndex; index < block.firstIndex + block.size; index++) set(index);
    for (const index of contents.revokedIndexes) set(index);
    const iat = Math.floor(now / 1000);
    const token = signJwt(await this.keys.signingKey(), STATUS_LIST_TYPE, {
      sub: listUri(baseUrl, list),
      iat,
      exp: iat + Math.max(2 * this.ttlSeconds, 60),
      ttl: this.ttlSeconds,
      status_list: { bits: 1, lst: deflateSync(bits, { level: 9 }).toString('base64url') },
    });
    this.#built.set(list, { token, at: now });
    return token;
  }

  #reserve(key: string, app: AppRecord, kind: PrincipalKind, previousSize: number | undefined): Promise<OpenBlock> {
    const pending = this.#reserving.get(key);
    if (pending !== undefined) return pending;
    const size = previousSize === undefined ? FIRST_BLOCK_SIZE : Math.min(previousSize * 2, LARGEST_BLOCK_SIZE);
    const reservedAt = this.clock.now();
    const reserving = this.store
      .reserveBlock({ size, appId: app.appId, kind, reservedAt, expiresBy: reservedAt + BLOCK_USE_MS + MAX_JWT_LIFETIME_MS })
      .then((first) => {
        const block = { next: first, end: first + size, size, reservedAt, usableUntil: reservedAt + BLOCK_USE_MS };
        this.#blocks.set(key, block);
        return block;
      })
      .finally(() => this.#reserving.delete(key));
    this.#reserving.set(key, reserving);
    return reserving;
  }
}

function usable(block: OpenBlock, app: AppRecord, kind: PrincipalKind, now: number): boolean {
  if (block.next >= block.end || now >= block.usableUntil) return false;
  // A revoke-all of anonymous tokens revokes the blocks reserved before it: the next token needs a new one.
  return kind === 'admin' || app.anonymousCutoff === null || app.anonymousCutoff < block.reservedAt;
}

/** Where a list is served: `{base}/api/status-lists/{list}`. */
export function listUri(baseUrl: string, list: number): string {
  return `${baseUrl}/api/status-lists/${list}`;
}
