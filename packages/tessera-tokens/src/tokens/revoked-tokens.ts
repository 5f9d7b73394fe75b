import type { Clock } from '../clock.js';
import type { MaybePromise } from '../maybe-promise.js';
import { NO_CACHE_LOOKUPS, type CacheLookups } from '../metrics/cache-lookups.js';

/** One anonymous token revoked on its own (RFC 7009), kept until it expires. */
export interface RevokedToken {
  /** The token's 16-byte id (`AnonymousTokenFacts.id`, latin1). */
  id: string;
  appId: string;
  /** UNIX ms, or null for a token that never expires (then kept until its app's anonymous tokens are revoked). */
  expiresAt: number | null;
}

export interface StoredRevocation extends RevokedToken {
  /** Increases with every revocation written: how instances read only what is new. */
  seq: number;
}

/** The revoked anonymous tokens, read by what is new: the server's `RevokedTokenStore` reads them so. */
export interface RevocationReads {
  /** Revocations written after `seq`, oldest first, at most `limit`. */
  since(seq: number, limit: number): Promise<StoredRevocation[]>;
}

const READ_BATCH = 10_000;
/** How often entries of expired tokens are dropped from memory. */
const PRUNE_INTERVAL_MS = 60_000;

/**
 * The revoked anonymous tokens, in memory, so that a check needs no query: every instance reads
 * what is new when the store signals a change (`stale`), before it answers the next check of an
 * anonymous token. How many there can be is bounded by the rate limits and by a cap per app
 * (`countOf`); entries leave with their token's expiry.
 */
export class RevokedTokens {
  readonly #byId = new Map<string, RevokedToken>();
  readonly #countByApp = new Map<string, number>();
  #seq = 0;
  #fresh = false;
  #refreshing: Promise<void> | undefined;
  /** Counts `stale` calls: a read begun before one does not make the list fresh. */
  #generation = 0;
  #prunedAt = 0;

  constructor(
    private readonly store: RevocationReads,
    private readonly clock: Clock,
    private readonly lookups: CacheLookups = NO_CACHE_LOOKUPS,
  ) {}

  /** Whether the token with this id was revoked; from memory once the list is fresh. */
  has(id: string): MaybePromise<boolean> {
    if (this.#fresh) {
      this.lookups.hit();
      // Nothing revoked is the common case: then not even the id's hash is read.
      return this.#byId.size !== 0 && this.#byId.has(id);
    }
    this.lookups.miss();
    return this.#refresh().then(() => this.#byId.has(id));
  }

  /** How many revoked tokens of the app this instance knows of. */
  countOf(appId: string): MaybePromise<number> {
    if (this.#fresh) return this.#countByApp.get(appId) ?? 0;
    return this.#refresh().then(() => this.#countByApp.get(appId) ?? 0);
  }

  /** Remembers a revocation this process wrote (refused at once here, before the store's signal). */
  remember(revocation: RevokedToken): void {
    this.#add(revocation);
  }

  /** Forgets the app's revocations (its anonymous tokens were all revoked, or it was deleted). */
  forgetApp(appId: string): void {
    if (!this.#countByApp.has(appId)) return;
    // Ids do not say their app; the rare revoke-all pays for the scan.
    for (const [id, revocation] of this.#byId) if (revocation.appId === appId) this.#remove(id, revocation);
  }

  /** Something may have been revoked elsewhere: the next check reads what is new first. */
  stale(): void {
    this.#generation++;
    this.#fresh = false;
  }

  #refresh(): Promise<void> {
    this.#refreshing ??= this.#readNew().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #readNew(): Promise<void> {
    const generation = this.#generation;
    for (;;) {
      const batch = await this.store.since(this.#seq, READ_BATCH);
      for (const revocation of batch) {
        this.#add(revocation);
        this.#seq = revocation.seq;
      }
      if (batch.length < READ_BATCH) break;
    }
    this.#prune();
    if (generation === this.#generation) this.#fresh = true;
  }

  #add(revocation: RevokedToken): void {
    if (this.#byId.has(revocation.id)) return;
    this.#byId.set(revocation.id, { id: revocation.id, appId: revocation.appId, expiresAt: revocation.expiresAt });
    this.#countByApp.set(revocation.appId, (this.#countByApp.get(revocation.appId) ?? 0) + 1);
  }

  #remove(id: string, { appId }: RevokedToken): void {
    this.#byId.delete(id);
    const count = (this.#countByApp.get(appId) ?? 1) - 1;
    if (count > 0) this.#countByApp.set(appId, count);
    else this.#countByApp.delete(appId);
  }

  /** Drops the tokens that have expired: they are refused anyway. */
  #prune(): void {
    const now = this.clock.now();
    if (now - this.#prunedAt < PRUNE_INTERVAL_MS) return;
    this.#prunedAt = now;
    for (const [id, revocation] of this.#byId)
      if (revocation.expiresAt !== null && revocation.expiresAt <= now) this.#remove(id, revocation);
  }
}
