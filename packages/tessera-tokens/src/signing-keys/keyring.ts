import { createSecretKey, type KeyObject } from 'node:crypto';
import { LoadedUntilForgotten } from '../cache/loaded-until-forgotten.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
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
  readonly #keys: LoadedUntilForgotten<LoadedKeys>;

  constructor(store: SigningKeyReads) {
    this.#keys = new LoadedUntilForgotten(async () => activeKeys(await store.list()));
  }

  /** The key that signs new tokens. */
  signingKey(): MaybePromise<ActiveKey> {
    return andThen(this.#keys.get(), signingOf);
  }

  /** An active key by id, or undefined (unknown or retired). */
  key(id: number): MaybePromise<ActiveKey | undefined> {
    return andThen(this.#keys.get(), (keys) => keys.byId.get(id));
  }

  forget(): void {
    this.#keys.forget();
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
