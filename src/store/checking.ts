import type { AppStore } from '../apps/store.js';
import type { SigningKeyStore } from '../signing-keys/store.js';
import type { RevokedTokenStore } from '../tokens/revoked-tokens.js';
import type { TokenStore } from '../tokens/store.js';
import type { StoreChange } from './store.js';

/**
 * What checking a request reads of the store (`createTokenChecking`), and the change signal that
 * keeps what it read fresh. The server's `Store` is one; another service's `TesseraVerifier` opens
 * only this (`openCheckingStore`), which never migrates nor writes.
 */
export interface CheckingStore {
  readonly apps: Pick<AppStore, 'findById'>;
  readonly tokens: Pick<TokenStore, 'findBySelector'>;
  readonly signingKeys: Pick<SigningKeyStore, 'list'>;
  readonly revokedTokens: Pick<RevokedTokenStore, 'since'>;
  /** As `Store.onChange`: called within a second of a change another process made. */
  onChange(listener: (change: StoreChange) => void): void;
}

export interface OpenCheckingStore extends CheckingStore {
  close(): Promise<void>;
}
