import type { AuditOf } from '../../events/event.js';
import type { PrincipalKind } from '../../principal.js';
import type { RevocationKind } from '../../apps/revoke-all.js';
import type { TokenRecord, TokenStore } from '../../tokens/store.js';
import { GroupCommit, type BatchListener } from '../group-commit.js';
import { immediateTransaction, type SqliteDatabase } from './connection.js';
import type { SqliteEventWrites } from './events.js';

interface TokenRow {
  verifier_hash: Buffer;
  app_id: string;
  kind: PrincipalKind;
  issued_at: number;
  expires_at: number | null;
}

/** The writes to the tokens table that the apps table's transactions make too. */
export interface SqliteTokenWrites {
  /** Returns how many tokens it removed. */
  deleteOfApp(appId: string, kind: RevocationKind): number;
  deleteRevokedOfApp(appId: string): void;
  setAnonymousCutoff(appId: string, at: number): void;
}

export function prepareTokenWrites(db: SqliteDatabase): SqliteTokenWrites {
  const deleteAppTokens = db.prepare('DELETE FROM tokens WHERE app_id = :appId');
  const deleteAppTokensOfKind = db.prepare('DELETE FROM tokens WHERE app_id = :appId AND kind = :kind');
  const deleteAppRevocations = db.prepare('DELETE FROM revoked_tokens WHERE app_id = :appId');
  const setCutoff = db.prepare('UPDATE apps SET anonymous_cutoff = :at WHERE app_id = :appId');
  return {
    deleteOfApp(appId, kind) {
      return (kind === 'all' ? deleteAppTokens.run({ appId }) : deleteAppTokensOfKind.run({ appId, kind })).changes;
    },
    deleteRevokedOfApp(appId) {
      deleteAppRevocations.run({ appId });
    },
    setAnonymousCutoff(appId, at) {
      setCutoff.run({ appId, at });
    },
  };
}

/** The token store, and the wait for the tokens it has yet to commit (closing waits for them). */
export interface SqliteTokens {
  store: TokenStore;
  drain(): Promise<void>;
  onBatch(listener: BatchListener): void;
}

export function sqliteTokens(db: SqliteDatabase, writes: SqliteTokenWrites, events: SqliteEventWrites): SqliteTokens {
  const statements = {
    // A batch in one statement, as events.ts inserts events: the rows as a JSON array, the bytes as hex.
    insertTokens: db.prepare(
      `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
       SELECT unhex(value ->> 0), unhex(value ->> 1), value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(:batch)`,
    ),
    insertToken: db.prepare(
      `INSERT INTO tokens (selector, verifier_hash, app_id, kind, issued_at, expires_at)
       VALUES (:selector, :verifierHash, :appId, :kind, :issuedAt, :expiresAt)`,
    ),
    findToken: db.prepare('SELECT verifier_hash, app_id, kind, issued_at, expires_at FROM tokens WHERE selector = :selector'),
    deleteToken: db.prepare('DELETE FROM tokens WHERE selector = :selector'),
    deleteExpiredTokens: db.prepare(
      `DELETE FROM tokens WHERE selector IN
         (SELECT selector FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch)`,
    ),
  };

  const insertTokens = (batch: TokenRecord[]) => {
    const rows = batch.map((token) => [
      token.selector.toString('hex'),
      token.verifierHash.toString('hex'),
      token.appId,
      token.kind,
      token.issuedAt,
      token.expiresAt,
    ]);
    statements.insertTokens.run({ batch: JSON.stringify(rows) });
  };
  const tokenWriter = new GroupCommit<TokenRecord>({
    writeBatch: (batch) => insertTokens(batch),
    writeOne: (token) => void statements.insertToken.run(token),
  });

  const revokeAll = immediateTransaction(db, (appId: string, kind: RevocationKind, at: number, audit: AuditOf<number>): number => {
    const count = writes.deleteOfApp(appId, kind);
    if (kind !== 'admin') {
      writes.setAnonymousCutoff(appId, at);
      writes.deleteRevokedOfApp(appId);
    }
    events.insert(audit(count));
    return count;
  });

  const store: TokenStore = {
    insert(token) {
      return tokenWriter.add(token);
    },
    async findBySelector(selector) {
      const row = statements.findToken.get({ selector }) as TokenRow | undefined;
      if (row === undefined) return undefined;
      return {
        selector,
        verifierHash: row.verifier_hash,
        appId: row.app_id,
        kind: row.kind,
        issuedAt: row.issued_at,
        expiresAt: row.expires_at,
      };
    },
    async delete(selector) {
      return statements.deleteToken.run({ selector }).changes > 0;
    },
    async revokeAll(appId, kind, at, audit) {
      return revokeAll(appId, kind, at, audit);
    },
    async deleteExpired(now, batch) {
      return statements.deleteExpiredTokens.run({ now, batch }).changes;
    },
  };
  return { store, drain: () => tokenWriter.drain(), onBatch: (listener) => tokenWriter.onBatch(listener) };
}
