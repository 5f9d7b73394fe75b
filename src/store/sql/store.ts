import type { ChangeSignal, Store, StoreChange, StoreTables } from '../store.js';
import { sqlAppStore } from './apps.js';
import { sqlAttestation, sqlAttestationStore } from './attestation.js';
import { sqlCredentialStore } from './credentials.js';
import { sqlDeveloperStore } from './developers.js';
import { sqlEventStore } from './events.js';
import { sqlJwtKeyStore, sqlStatusListStore } from './jwt.js';
import { sqlMailStore } from './mail.js';
import { sqlSigningKeyStore } from './signing-keys.js';
import { sqlOnceClaimStore } from './once-claims.js';
import { sqlRevokedTokenStore } from './revoked-tokens.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';
import { sqlTokenTable, sqlTokens } from './tokens.js';
import { sqlUpgradeStore } from './upgrade.js';
import { sqlWebhookStore } from './webhooks.js';
import type { UpgradeState } from '../../upgrade/store.js';

/** What a dialect gives the one store: its runner, its change signal, and how it lets go of the database. */
export interface StoreDriver {
  readonly backend: Store['backend'];
  readonly sql: SqlRunner;
  /** Batches of tokens written at the same time. */
  readonly tokenBatchesInFlight: number;
  onChange(listener: (change: StoreChange) => void): void;
  changeSignal(): ChangeSignal;
  /** The upgrade state read once the schema was migrated (`readUpgradeState`). */
  readonly upgradeState: UpgradeState | undefined;
  /** Stops the change signal and closes the connections; called once, after the pending tokens are written. */
  close(): Promise<void>;
}

/**
 * The table stores over one transaction's runner, each made when first asked for: a transaction
 * makes only those it uses. Reads on it are read at once, never batched with other requests'.
 */
function tablesOn(tx: SqlRunner): StoreTables {
  let apps: StoreTables['apps'] | undefined;
  let tokens: StoreTables['tokens'] | undefined;
  let credentials: StoreTables['credentials'] | undefined;
  let events: StoreTables['events'] | undefined;
  let developers: StoreTables['developers'] | undefined;
  let onceClaims: StoreTables['onceClaims'] | undefined;
  let attestation: StoreTables['attestation'] | undefined;
  let webhooks: StoreTables['webhooks'] | undefined;
  let mail: StoreTables['mail'] | undefined;
  return {
    get apps() {
      return (apps ??= sqlAppStore(tx, { batchReads: false }));
    },
    get tokens() {
      return (tokens ??= sqlTokenTable(tx));
    },
    get developers() {
      return (developers ??= sqlDeveloperStore(tx));
    },
    get credentials() {
      return (credentials ??= sqlCredentialStore(tx));
    },
    get events() {
      return (events ??= sqlEventStore(tx));
    },
    get onceClaims() {
      return (onceClaims ??= sqlOnceClaimStore(tx));
    },
    get attestation() {
      return (attestation ??= sqlAttestationStore(tx));
    },
    get webhooks() {
      return (webhooks ??= sqlWebhookStore(tx));
    },
    get mail() {
      return (mail ??= sqlMailStore(tx));
    },
  };
}

/** Every table, written once over the dialect's runner. */
export function sqlStore(driver: StoreDriver): Store {
  const { sql } = driver;
  const tokens = sqlTokens(sql, driver.tokenBatchesInFlight);
  const attestation = sqlAttestation(sql, driver.tokenBatchesInFlight);
  let closed = false;
  return {
    backend: driver.backend,
    apps: sqlAppStore(sql),
    tokens: tokens.store,
    credentials: sqlCredentialStore(sql),
    revokedTokens: sqlRevokedTokenStore(sql),
    signingKeys: sqlSigningKeyStore(sql),
    jwtKeys: sqlJwtKeyStore(sql),
    statusLists: sqlStatusListStore(sql),
    events: sqlEventStore(sql),
    developers: sqlDeveloperStore(sql),
    onceClaims: sqlOnceClaimStore(sql),
    attestation,
    webhooks: sqlWebhookStore(sql),
    mail: sqlMailStore(sql),
    upgrade: sqlUpgradeStore(sql, driver.upgradeState),
    transaction: (work) => sql.transaction((tx) => work(tablesOn(tx))),
    onChange: (listener) => driver.onChange(listener),
    changeSignal: () => (closed ? { up: false, problem: 'the store is closed', trustedUntil: 0 } : driver.changeSignal()),
    onTokenBatch: (listener) => tokens.onBatch(listener),
    async ping() {
      // A closed store is not ready, whatever a driver's prepared statement would still answer.
      if (closed) throw new Error('the store is closed');
      await sql.get('SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      await tokens.drain();
      await attestation.drain();
      await driver.close();
    },
  };
}
