import { createSecretKey, type KeyObject } from 'node:crypto';
import type { MaybePromise } from '../maybe-promise.js';
import { signingKeyOf, type SigningKeyReads, type StoredSigningKey } from './key.js';

/** A key ready to sign or verify with. */
export interface ActiveKey {
  id: number;
  key: KeyObject;
}

interface LoadedKeys {
  signing: ActiveKey | undefined;
  byId: Map<number, ActiveKey>;
}

/**
 * The active keys, read from the store once and kept in memory, so that signing and verifying an
 * anonymous token needs no query. `forget` (called on the store's change signal) makes the next use
 * read them again: a rotated key signs, and a retired one stops verifying, within a second everywhere.
 */
export class Keyring {
  #loaded: LoadedKeys | undefined;
  #loading: Promise<LoadedKeys> | undefined;
  /** Counts `forget` calls, so that a read begun before one is not kept. */
  #generation = 0;

  constructor(private readonly store: SigningKeyReads) {}

  /** The key that signs new tokens. */
  signingKey(): MaybePromise<ActiveKey> {
    const loaded = this.#loaded;
    if (loaded !== undefined) return signingOf(loaded);
    return this.#load().then(signingOf);
  }

  /** An active key by id, or undefined (unknown or retired). */
  key(id: number): MaybePromise<ActiveKey | undefined> {
    const loaded = this.#loaded;
    if (loaded !== undefined) return loaded.byId.get(id);
    return this.#load().then((keys) => keys.byId.get(id));
  }

  forget(): void {
    this.#generation++;
    this.#loaded = undefined;
    this.#loading = undefined;
  }

  #load(): Promise<LoadedKeys> {
    if (this.#loading !== undefined) return this.#loading;
    const generation = this.#generation;
    const loading = this.store.list().then(
      (keys) => {
        const loaded = activeKeys(keys);
        if (generation === this.#generation) this.#loaded = loaded;
        if (this.#loading === loading) this.#loading = undefined;
        return loaded;
      },
      (error: unknown) => {
        if (this.#loading === loading) this.#loading = undefined;
        throw error;
      },
    );
    this.#loading = loading;
    return loading;
  }
}

function activeKeys(keys: readonly StoredSigningKey[]): LoadedKeys {
  const byId = new Map<number, ActiveKey>();
  for (const { id, secret, retiredAt } of keys) {
    if (retiredAt === null && secret !== null) byId.set(id, { id, key: createSecretKey(secret) });
  }
  const signing = signingKeyOf(keys);
  return { signing: signing && byId.get(signing.id), byId };
}

function signingOf(keys: LoadedKeys): ActiveKey {
  if (keys.signing === undefined) throw new Error('the store holds no active signing key (tessera keys rotate creates one)');
  return keys.signing;
}
