import type { CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';
import type { CredentialStore } from './store.js';

/** How often, at most, a credential's last use is written. */
export const LAST_USED_INTERVAL_MS = 60_000;
/** Credentials whose last write this process remembers; past it, it starts over (a write more, no harm). */
const MAX_REMEMBERED = 100_000;

/**
 * Records when credentials are used, at most once a minute each, without making the request that
 * used one wait: issuing a token stays a single insert. A write that fails is reported and not
 * tried again: the next use a minute later writes it.
 */
export class CredentialUse {
  readonly #written = new Map<string, number>();

  constructor(
    private readonly store: CredentialStore,
    private readonly onError: (error: unknown) => void,
  ) {}

  used(credential: CredentialRecord, now: number): void {
    const last = this.#written.get(credential.clientId) ?? credential.lastUsedAt;
    if (last !== null && now - last < LAST_USED_INTERVAL_MS) return;
    if (this.#written.size >= MAX_REMEMBERED) this.#written.clear();
    this.#written.set(credential.clientId, now);
    this.store.markUsed(credential.clientId, now, LAST_USED_INTERVAL_MS).catch(this.onError);
  }
}
