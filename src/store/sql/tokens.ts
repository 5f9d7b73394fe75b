import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import type { RevocationKind } from '../../apps/revoke-all.js';
import type { TokenRecord, TokenStore } from '../../tokens/store.js';
import { GroupCommit, type BatchListener } from '../group-commit.js';
import { withdrawAdminGrants } from './admin-grants.js';
import { batchRows, type BatchColumn } from './batch.js';
import { deleteRevokedTokensOfApp } from './revoked-tokens.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';
import { TOKEN_COLUMNS, tokenReads } from 'tessera-tokens/internal/store/sql/token-reads.js';

const TOKEN_BATCH_COLUMNS: readonly BatchColumn[] = [
  ['selector', 'bytes'],
  ['verifier_hash', 'bytes'],
  ['app_id', 'text'],
  ['kind', 'text'],
  ['issued_at', 'bigint'],
  ['expires_at', 'bigint'],
  ['client_id', 'text'],
  ['scopes', 'text'],
  ['status_index', 'bigint'],
  // Not stored: what the app's generation must still be (`AppRecord.adminGeneration`).
  ['admin_generation', 'bigint'],
];

const tokenRows = batchRows(TOKEN_BATCH_COLUMNS, 'issued');
/** What is written of a token: what is read, and a JWT's index in the status lists (`src/jwt/status-lists.ts`). */
const INSERTED_COLUMNS = `${TOKEN_COLUMNS}, status_index`;
const ISSUED_COLUMNS = INSERTED_COLUMNS.split(', ')
  .map((column) => `issued.${column}`)
  .join(', ');

/**
 * A batch of tokens, each inserted only if its app's admin generation is still the one its request
 * was authenticated against: a token whose request raced a revocation is not inserted (and, on
 * PostgreSQL, its selector not returned). PostgreSQL holds each app's row FOR KEY SHARE until the
 * commit, which a revocation waits for (`withdrawAdminGrants`); a revocation committed first makes
 * the row read anew, its generation changed. SQLite returns nothing: reading the selectors back
 * costs it 1.5–2 µs a token, and a batch is nearly always stored whole, which its count of changes
 * says (`writeTokens`).
 */
const GUARDED_TOKEN_INSERT = {
  sqlite: `INSERT INTO tokens (${INSERTED_COLUMNS})
           SELECT ${ISSUED_COLUMNS} FROM ${tokenRows.from.sqlite}
           JOIN apps ON apps.app_id = issued.app_id AND apps.admin_generation = issued.admin_generation
           WHERE true`,
  postgres: `INSERT INTO tokens (${INSERTED_COLUMNS})
             SELECT ${ISSUED_COLUMNS} FROM ${tokenRows.from.postgres}
             JOIN apps ON apps.app_id = issued.app_id AND apps.admin_generation = issued.admin_generation
             FOR KEY SHARE OF apps
             RETURNING selector`,
};

/** A token to insert, and the admin generation its app must still have. */
interface NewToken {
  token: TokenRecord;
  adminGeneration: number;
}

/** Removes the app's tokens, or those of one kind, in the caller's transaction; returns how many. */
export async function deleteTokensOfApp(tx: SqlRunner, appId: string, kind: RevocationKind): Promise<number> {
  return kind === 'all'
    ? tx.run('DELETE FROM tokens WHERE app_id = :appId', { appId })
    : tx.run('DELETE FROM tokens WHERE app_id = :appId AND kind = :kind', { appId, kind });
}

/** The token store, and the wait for the tokens it has yet to commit (closing waits for them). */
export interface SqlTokens {
  store: TokenStore;
  drain(): Promise<void>;
  onBatch(listener: BatchListener): void;
}

/**
 * Writes a batch of tokens in one statement (`GUARDED_TOKEN_INSERT`); whether each was stored. */
async function writeTokens(db: SqlRunner, batch: readonly NewToken[]): Promise<(true | undefined)[]> {
  const rows = batch.map(({ token, adminGeneration }) => [
    token.selector,
    token.verifierHash,
    token.appId,
    token.kind,
    token.issuedAt,
    token.expiresAt,
    token.clientId,
    token.scopes?.join(' ') ?? null,
    token.statusIndex ?? null,
    adminGeneration,
  ]);
  let inserted: { selector: Uint8Array }[];
  if (db.dialect === 'sqlite') {
    if ((await db.run(GUARDED_TOKEN_INSERT, tokenRows.params(db.dialect, rows))) === batch.length) return batch.map(() => true);
    // A revocation came between some of these requests and their batch: the ones stored say which.
    // One revoked since is not found either, and is answered as not stored, as it would be now.
    inserted = await db.all<{ selector: Uint8Array }>(
      STORED_SELECTORS.statement,
      STORED_SELECTORS.params(
        db.dialect,
        batch.map(({ token }) => [token.selector]),
      ),
    );
  } else {
    inserted = await db.all<{ selector: Uint8Array }>(GUARDED_TOKEN_INSERT, tokenRows.params(db.dialect, rows));
  }
  const selectors = new Set(inserted.map((row) => Buffer.from(row.selector).toString('latin1')));
  return batch.map(({ token }) => (selectors.has(token.selector.toString('latin1')) ? true : undefined));
}

const selectorRows = batchRows([['selector', 'bytes']], 'batch');
/** Which of a batch's selectors are stored. */
const STORED_SELECTORS = {
  statement: {
    sqlite: `SELECT tokens.selector FROM ${selectorRows.from.sqlite} JOIN tokens ON tokens.selector = batch.selector`,
    postgres: `SELECT tokens.selector FROM ${selectorRows.from.postgres} JOIN tokens ON tokens.selector = batch.selector`,
  },
  params: selectorRows.params,
};

/**
 * The tokens over one runner, each method a statement of its own (or a transaction of its own, or
 * of the caller): what a transaction is given (`Store.transaction`), and what `sqlTokens` adds
 * group commit and batched reads to.
 */
export function sqlTokenTable(db: SqlRunner): TokenStore {
  return {
    async insert(token, adminGeneration) {
      return (await writeTokens(db, [{ token, adminGeneration }]))[0];
    },
    ...tokenReads(db, { batchReads: false }),
    async delete(selector) {
      return (await db.run('DELETE FROM tokens WHERE selector = :selector', { selector })) > 0 ? true : undefined;
    },
    async revokeAll(appId, kind, at) {
      return db.transaction(async (tx) => {
        if (kind !== 'anonymous') await withdrawAdminGrants(tx, appId);
        const count = await deleteTokensOfApp(tx, appId, kind);
        if (kind !== 'admin') {
          await tx.run('UPDATE apps SET anonymous_cutoff = :at WHERE app_id = :appId', { appId, at });
          // The cut-off covers them.
          await deleteRevokedTokensOfApp(tx, appId);
        }
        return count;
      });
    },
    async deleteOfApp(appId, kind) {
      return deleteTokensOfApp(db, appId, kind);
    },
    async deleteExpired(now, batch) {
      return db.transaction(async (tx) => {
        // Other instances are not told (PostgreSQL's trigger keeps quiet): an expired token is refused without its record.
        if (tx.dialect === 'postgres') await tx.run("SET LOCAL tessera.quiet = 'on'");
        return tx.run(
          {
            sqlite: `DELETE FROM tokens WHERE selector IN
                       (SELECT selector FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch)`,
            // SKIP LOCKED: instances running housekeeping at once take different rows.
            postgres: `DELETE FROM tokens WHERE selector IN
                         (SELECT selector FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch FOR UPDATE SKIP LOCKED)`,
          },
          { now, batch },
        );
      });
    },
  };
}

/** `maxInFlight`: how many batches of tokens may be written at the same time (a share of PostgreSQL's pool; SQLite writes one). */
export function sqlTokens(db: SqlRunner, maxInFlight = 1): SqlTokens {
  // One statement and one commit for every batch of tokens (group commit): a token is durable when
  // its request is answered.
  const tokenWriter = new GroupCommit<NewToken, true | undefined>({
    writeBatch: (batch) => writeTokens(db, batch),
    writeOne: async (token) => (await writeTokens(db, [token]))[0],
    failsEverything: isServiceUnavailable,
    maxInFlight,
  });

  const store: TokenStore = {
    ...sqlTokenTable(db),
    insert(token, adminGeneration) {
      return tokenWriter.add({ token, adminGeneration });
    },
    ...tokenReads(db),
  };
  return { store, drain: () => tokenWriter.drain(), onBatch: (listener) => tokenWriter.onBatch(listener) };
}
