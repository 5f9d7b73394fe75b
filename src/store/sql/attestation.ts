import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { claimsExpiredBy, SERIALS_PER_BLOCK, type AttestationStore, type DebugTokenRecord } from '../../attestation/store.js';
import type { SqlRunner, Statement } from 'tessera-tokens/internal/store/sql/runner.js';
import { StoreConflictError } from 'tessera-tokens/internal/transaction.js';
import { GroupCommit } from '../group-commit.js';
import { batchInsert } from './batch.js';

/** The most claims in one batch: on SQLite, each number of claims is a statement of its own, prepared once. */
const MAX_CLAIM_BATCH = 64;

/** `newClaims`' statements, by number of claims. */
const NEW_CLAIMS: Statement[] = [];

/**
 * `count` claims in one INSERT, a parameter each, stored all or none: one claimed before fails it
 * (`StoreConflictError`). A parameter a claim costs a third less than one JSON array read by
 * `json_each` (./batch.ts) on SQLite, where a claim is most of a proof of work's cost.
 */
function newClaims(count: number): Statement {
  return (NEW_CLAIMS[count] ??=
    `INSERT INTO attestation_claims (claim) VALUES ${Array.from({ length: count }, (_, index) => `(:c${index})`).join(', ')}`);
}

/** Claims in one statement: the ones not claimed before come back. */
const CLAIMS = batchInsert('attestation_claims', [['claim', 'bytes']], 'ON CONFLICT (claim) DO NOTHING RETURNING claim');

/**
 * Whether each claim was new: true for the first of the batch with its value that was not stored yet.
 *
 * A batch is nearly always all new (a replay is an attack, or a client's mistake), and on SQLite
 * reading the rows back costs a third of a claim: a plain INSERT says "all new" without them, and
 * one that fails stores nothing, after which the rows read back tell which were new. PostgreSQL
 * would log each failed INSERT as an error, an attacker's replays filling the log: there, the rows
 * are read back, which costs its server rather than this one.
 */
async function insertClaims(db: SqlRunner, claims: readonly Buffer[]): Promise<(true | undefined)[]> {
  if (db.dialect === 'sqlite') {
    const params: Record<string, Buffer> = {};
    claims.forEach((claim, index) => (params[`c${index}`] = claim));
    try {
      await db.run(newClaims(claims.length), params);
      return claims.map(() => true);
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error;
    }
  }
  const stored = await db.all<{ claim: Uint8Array }>(
    CLAIMS.statement,
    CLAIMS.params(
      db.dialect,
      claims.map((claim) => [claim]),
    ),
  );
  const inserted = new Set(stored.map((row) => Buffer.from(row.claim).toString('latin1')));
  return claims.map((claim) => (inserted.delete(claim.toString('latin1')) ? true : undefined));
}

/**
 * Claims serials (`SERIALS_PER_BLOCK` a block): true for each whose bit was not set yet, the first of
 * the batch with its value. A bit is `get_bit`'s on PostgreSQL: bit n is bit n % 8 of byte n / 8,
 * counted from the lowest, so that a block's bytes mean the same on either store (`tessera copy`).
 */
async function claimSerials(db: SqlRunner, serials: readonly number[]): Promise<(true | undefined)[]> {
  const byBlock = new Map<number, number[]>();
  for (const serial of serials) {
    const block = Math.floor(serial / SERIALS_PER_BLOCK);
    const bits = byBlock.get(block);
    if (bits === undefined) byBlock.set(block, [serial % SERIALS_PER_BLOCK]);
    else bits.push(serial % SERIALS_PER_BLOCK);
  }
  const claimed = new Set<number>();
  const claimAll = async (runner: SqlRunner) => {
    for (const [block, bits] of byBlock) {
      for (const bit of await claimInBlock(runner, block, bits)) claimed.add(block * SERIALS_PER_BLOCK + bit);
    }
  };
  // SQLite sets the bits in one transaction; PostgreSQL in one statement a block (tessera_claim_serials, under the row's lock).
  await (db.dialect === 'sqlite' ? db.transaction(claimAll) : claimAll(db));
  return serials.map((serial) => (claimed.delete(serial) ? true : undefined));
}

/** Sets the block's bits: the ones that were not set come back (none if the block is gone). */
async function claimInBlock(db: SqlRunner, block: number, bits: readonly number[]): Promise<number[]> {
  if (db.dialect === 'postgres') {
    const row = await db.get<{ claimed: number[] }>('SELECT tessera_claim_serials(:block, CAST(:bits AS integer[])) AS claimed', {
      block,
      bits: [...bits],
    });
    return row?.claimed ?? [];
  }
  const row = await db.get<{ claimed: Uint8Array }>('SELECT claimed FROM pow_serial_blocks WHERE block = :block', { block });
  if (row === undefined) return [];
  const bytes = Buffer.from(row.claimed);
  const claimed: number[] = [];
  for (const bit of bits) {
    const index = bit >> 3;
    const mask = 1 << (bit & 7);
    const byte = bytes[index]!;
    if ((byte & mask) !== 0) continue;
    bytes[index] = byte | mask;
    claimed.push(bit);
  }
  if (claimed.length > 0) await db.run('UPDATE pow_serial_blocks SET claimed = :bytes WHERE block = :block', { block, bytes });
  return claimed;
}

interface DebugTokenRow {
  id: string;
  app_id: string;
  name: string;
  token_hash: Uint8Array;
  created_at: number;
  last_used_at: number | null;
}

const COLUMNS = 'id, app_id, name, token_hash, created_at, last_used_at';

function recordOf(row: DebugTokenRow): DebugTokenRecord {
  return {
    id: row.id,
    appId: row.app_id,
    name: row.name,
    tokenHash: Buffer.from(row.token_hash),
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

/**
 * The attestation's tables over one runner, each method a statement of its own: what a transaction
 * is given (`Store.transaction`), and what `sqlAttestation` adds group commit to.
 */
export function sqlAttestationStore(db: SqlRunner): AttestationStore {
  return {
    async claim(claim) {
      return (await insertClaims(db, [claim]))[0];
    },
    async deleteExpiredClaims(now, batch) {
      return db.run(
        'DELETE FROM attestation_claims WHERE claim IN (SELECT claim FROM attestation_claims WHERE claim < :bound ORDER BY claim LIMIT :batch)',
        { bound: claimsExpiredBy(now), batch },
      );
    },
    async reserveSerials(expiresAt) {
      const row = await db.get<{ block: number }>(
        'INSERT INTO pow_serial_blocks (claimed, expires_at) VALUES (:claimed, :expiresAt) RETURNING block',
        { claimed: Buffer.alloc(SERIALS_PER_BLOCK / 8), expiresAt },
      );
      return row!.block;
    },
    async claimSerial(serial) {
      return (await claimSerials(db, [serial]))[0];
    },
    async deleteExpiredSerials(now, batch) {
      return db.run(
        'DELETE FROM pow_serial_blocks WHERE block IN (SELECT block FROM pow_serial_blocks WHERE expires_at <= :now ORDER BY block LIMIT :batch)',
        { now, batch },
      );
    },
    async insertDebugToken(record) {
      await db.run(`INSERT INTO attestation_debug_tokens (${COLUMNS}) VALUES (:id, :appId, :name, :tokenHash, :createdAt, :lastUsedAt)`, {
        ...record,
      });
    },
    async debugTokensOf(appId) {
      const rows = await db.all<DebugTokenRow>(
        `SELECT ${COLUMNS} FROM attestation_debug_tokens WHERE app_id = :appId ORDER BY created_at, id`,
        { appId },
      );
      return rows.map(recordOf);
    },
    async countDebugTokens(appId) {
      const row = await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM attestation_debug_tokens WHERE app_id = :appId', { appId });
      return Number(row?.n ?? 0);
    },
    async findDebugToken(appId, tokenHash) {
      const row = await db.get<DebugTokenRow>(
        `SELECT ${COLUMNS} FROM attestation_debug_tokens WHERE token_hash = :tokenHash AND app_id = :appId`,
        { appId, tokenHash },
      );
      return row && recordOf(row);
    },
    async deleteDebugToken(appId, id) {
      const row = await db.get<DebugTokenRow>(
        `DELETE FROM attestation_debug_tokens WHERE id = :id AND app_id = :appId RETURNING ${COLUMNS}`,
        { appId, id },
      );
      return row && recordOf(row);
    },
    async findSettings(appId, provider) {
      const row = await db.get<{ app_id: string; provider: string; settings: string; updated_at: number }>(
        'SELECT app_id, provider, settings, updated_at FROM attestation_settings WHERE app_id = :appId AND provider = :provider',
        { appId, provider },
      );
      return row && { appId: row.app_id, provider: row.provider, settings: row.settings, updatedAt: row.updated_at };
    },
    async putSettings(record) {
      await db.run(
        `INSERT INTO attestation_settings (app_id, provider, settings, updated_at) VALUES (:appId, :provider, :settings, :updatedAt)
         ON CONFLICT (app_id, provider) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
        { ...record },
      );
    },
    async deleteSettings(appId, provider) {
      return (await db.run('DELETE FROM attestation_settings WHERE app_id = :appId AND provider = :provider', { appId, provider })) > 0
        ? true
        : undefined;
    },
    async findKey(appId, keyId) {
      const row = await db.get<{ public_key: Uint8Array; counter: number }>(
        'SELECT public_key, counter FROM attestation_keys WHERE app_id = :appId AND key_id = :keyId',
        { appId, keyId },
      );
      return row && { publicKey: Buffer.from(row.public_key), counter: row.counter };
    },
    async insertKey(appId, keyId, publicKey, at) {
      const inserted = await db.run(
        `INSERT INTO attestation_keys (app_id, key_id, public_key, counter, created_at) VALUES (:appId, :keyId, :publicKey, 0, :at)
         ON CONFLICT (app_id, key_id) DO NOTHING`,
        { appId, keyId, publicKey, at },
      );
      return inserted > 0 ? true : undefined;
    },
    async advanceCounter(appId, keyId, counter) {
      const updated = await db.run(
        'UPDATE attestation_keys SET counter = :counter WHERE app_id = :appId AND key_id = :keyId AND counter < :counter',
        { appId, keyId, counter },
      );
      return updated > 0 ? true : undefined;
    },
    async touchDebugToken(id, at) {
      await db.run(
        'UPDATE attestation_debug_tokens SET last_used_at = :at WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :before)',
        { id, at, before: at - 60_000 },
      );
    },
  };
}

/**
 * The store's own: the claims that arrive together (the proofs of a burst of anonymous token
 * requests) share one statement (a transaction of a statement or two by serial) and one commit
 * (group commit), as tokens do; each is answered once its batch has committed.
 */
export function sqlAttestation(db: SqlRunner, maxInFlight = 1): AttestationStore & { drain(): Promise<void> } {
  const groupCommitted = <T>(write: (runner: SqlRunner, batch: readonly T[]) => Promise<(true | undefined)[]>) =>
    new GroupCommit<T, true | undefined>({
      writeBatch: (batch) => write(db, batch),
      writeOne: async (item) => (await write(db, [item]))[0],
      failsEverything: isServiceUnavailable,
      maxBatch: MAX_CLAIM_BATCH,
      maxInFlight,
    });
  const claims = groupCommitted(insertClaims);
  const serials = groupCommitted(claimSerials);
  return {
    ...sqlAttestationStore(db),
    claim: (claim) => claims.add(claim),
    claimSerial: (serial) => serials.add(serial),
    drain: async () => {
      await Promise.all([claims.drain(), serials.drain()]);
    },
  };
}
