import type { AppStore } from '../apps/store.js';
import type { AttestationStore } from '../attestation/store.js';
import type { CredentialStore } from '../credentials/store.js';
import type { DeveloperStore } from '../developers/store.js';
import type { EventStore } from '../events/store.js';
import type { JwtKeyStore, StatusListStore } from '../jwt/store.js';
import type { MailStore } from '../mail/store.js';
import type { SigningKeyStore } from '../signing-keys/store.js';
import type { OnceClaimStore } from '../once-claims.js';
import type { RevokedTokenStore } from '../tokens/revoked-token-store.js';
import type { TokenStore } from '../tokens/store.js';
import type { UpgradeStore } from '../upgrade/store.js';
import type { WebhookStore } from '../webhooks/store.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import type { BatchListener } from './group-commit.js';
import type { ChangeSignal, CheckingStore } from 'tessera-tokens/internal/store/checking.js';

export { DEFAULT_STALE_LIMIT_MS, type ChangeSignal, type StoreChange } from 'tessera-tokens/internal/store/checking.js';

/**
 * The table stores bound to one transaction (`Store.transaction`): every statement of theirs runs
 * in it. The same interfaces as the store's own; a method that writes several statements (a
 * credential's revocation with what it made) runs them in the transaction it is called in.
 */
export interface StoreTables {
  readonly apps: AppStore;
  /** `insert` is one statement of the transaction, not group-committed. */
  readonly tokens: TokenStore;
  readonly credentials: CredentialStore;
  readonly events: EventStore;
  readonly developers: DeveloperStore;
  readonly onceClaims: OnceClaimStore;
  readonly attestation: AttestationStore;
  readonly webhooks: WebhookStore;
  /** Mail waiting to be sent, written with the change it tells of (`src/mail/`). */
  readonly mail: MailStore;
}

/**
 * Everything the service keeps: one implementation, `sqlStore` (`sql/store.ts`), over either dialect's
 * driver (`sqlite/store.ts`, `postgres/store.ts`).
 */
export interface Store extends Transactional<StoreTables>, CheckingStore {
  readonly backend: 'sqlite' | 'postgres';
  readonly apps: AppStore;
  readonly tokens: TokenStore;
  /** Apps' further credentials; read with their apps (`AppRecord.credentials`). */
  readonly credentials: CredentialStore;
  readonly revokedTokens: RevokedTokenStore;
  readonly signingKeys: SigningKeyStore;
  /** The keys of JWT access tokens and status lists (`src/jwt/`). */
  readonly jwtKeys: JwtKeyStore;
  /** The Token Status Lists' reserved blocks and revoked indexes (`src/jwt/status-lists.ts`). */
  readonly statusLists: StatusListStore;
  readonly events: EventStore;
  /** Developer accounts, their sessions and one-time links, and who owns and collaborates on each app. */
  readonly developers: DeveloperStore;
  /** The portal's once values claimed by the changes they went with (`src/once-claims.ts`). */
  readonly onceClaims: OnceClaimStore;
  /** The apps' attestation debug tokens (`src/attestation/`). */
  readonly attestation: AttestationStore;
  /** The apps' webhooks and their deliveries (`src/webhooks/`). */
  readonly webhooks: WebhookStore;
  /** Mail to send, the alerts to mail, and what alerts need (`src/mail/`). */
  readonly mail: MailStore;
  /** The instances serving on the store, by release, and the release it is finalized for (`src/upgrade/`). */
  readonly upgrade: UpgradeStore;
  /** Whether changes made by other processes are being heard now, and until when caches are trusted. */
  changeSignal(): ChangeSignal;
  /** Told of every batch of tokens written in one transaction (group commit), for the metrics. */
  onTokenBatch(listener: BatchListener): void;
  /** Resolves if the store answers now (readiness); throws otherwise. */
  ping(): Promise<void>;
  /** Writes what is pending, then closes. Idempotent. */
  close(): Promise<void>;
}
