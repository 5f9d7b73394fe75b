import type pg from 'pg';
import { isServiceUnavailable } from '../../error-catalogue.js';
import type { PrincipalKind } from '../../principal.js';
import type { RevocationKind } from '../../apps/revoke-all.js';
import type { TokenRecord, TokenStore } from '../../tokens/store.js';
import { GroupCommit, type BatchListener } from '../group-commit.js';
import type { PostgresQueries } from './connection.js';
import { insertEvents } from './events.js';
import { deleteRevokedTokensOfApp } from './revoked-tokens.js';

interface TokenRow {
  verifier_hash: Buffer;
  app_id: string;
  kind: PrincipalKind;
  issued_at: string;
  expires_at: string | null;
}

/** Removes the app's tokens, or those of one kind, on the connection of a transaction; returns how many. */
export async function deleteTokensOfApp(client: pg.PoolClient, appId: string, kind: RevocationKind): Promise<number> {
  const result =
    kind === 'all'
      ? await client.query('DELETE FROM tokens WHERE app_id = $1', [appId])
      : await client.query('DELETE FROM tokens WHERE app_id = $1 AND kind = $2', [appId, kind]);
  return result.rowCount ?? 0;
}

/** Sets the app's anonymous cut-off and drops its single revocations, on the connection of a transaction. */
async function cutOffAnonymousTokens(client: pg.PoolClient, appId: string, at: number): Promise<void> {
  await client.query('UPDATE apps SET anonymous_cutoff = $2 WHERE app_id = $1', [appId, at]);
  await deleteRevokedTokensOfApp(client, appId);
}

/** The token store, and the wait for the tokens it has yet to commit (closing waits for them). */
export interface PostgresTokens {
  store: TokenStore;
  drain(): Promise<void>;
  onBatch(listener: BatchListener): void;
}

/** `maxInFlight`: how many batches of tokens may be written at the same time (a share of the pool). */
export function postgresTokens(db: PostgresQueries, maxInFlight: number): PostgresTokens {
  // One round trip and one commit for every batch of tokens (group commit); with PostgreSQL's
  // default synchronous_commit, a token is durable when its request is answered.
  const tokenWriter = new GroupCommit<TokenRecord>({
    writeBatch: async (batch) => {
      await db.query({
        name: 'tessera-insert-tokens',
        text: `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
               SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])`,
        values: [
          batch.map((token) => token.selector),
          batch.map((token) => token.verifierHash),
          batch.map((token) => token.appId),
          batch.map((token) => token.kind),
          batch.map((token) => token.issuedAt),
          batch.map((token) => token.expiresAt),
        ],
      });
    },
    writeOne: async (token) => {
      await db.query({
        name: 'tessera-insert-token',
        text: `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
        values: [token.selector, token.verifierHash, token.appId, token.kind, token.issuedAt, token.expiresAt],
      });
    },
    failsEverything: isServiceUnavailable,
    maxInFlight,
  });

  const store: TokenStore = {
    insert(token) {
      return tokenWriter.add(token);
    },
    async findBySelector(selector) {
      const result = await db.query<TokenRow>({
        name: 'tessera-find-token',
        text: 'SELECT verifier_hash, app_id, kind, issued_at, expires_at FROM tokens WHERE selector = $1',
        values: [selector],
      });
      const row = result.rows[0];
      if (row === undefined) return undefined;
      return {
        selector,
        verifierHash: row.verifier_hash,
        appId: row.app_id,
        kind: row.kind,
        issuedAt: Number(row.issued_at),
        expiresAt: row.expires_at === null ? null : Number(row.expires_at),
      };
    },
    async delete(selector) {
      const result = await db.query({ name: 'tessera-delete-token', text: 'DELETE FROM tokens WHERE selector = $1', values: [selector] });
      return (result.rowCount ?? 0) > 0;
    },
    async revokeAll(appId, kind, at, audit) {
      return db.transaction(async (client) => {
        const count = await deleteTokensOfApp(client, appId, kind);
        if (kind !== 'admin') await cutOffAnonymousTokens(client, appId, at);
        await insertEvents(client, audit(count));
        return count;
      });
    },
    async deleteExpired(now, batch) {
      return db.transaction(async (client) => {
        await client.query("SET LOCAL tessera.quiet = 'on'");
        const result = await client.query(
          `DELETE FROM tokens WHERE selector IN
             (SELECT selector FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [now, batch],
        );
        return result.rowCount ?? 0;
      });
    },
  };
  return { store, drain: () => tokenWriter.drain(), onBatch: (listener) => tokenWriter.onBatch(listener) };
}
