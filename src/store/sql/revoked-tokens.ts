import type { RevokedTokenStore } from '../../tokens/revoked-token-store.js';
import { revocationsSince } from 'tessera-tokens/internal/store/sql/revoked-token-reads.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

export async function deleteRevokedTokensOfApp(tx: SqlRunner, appId: string): Promise<void> {
  await tx.run('DELETE FROM revoked_tokens WHERE app_id = :appId', { appId });
}

export function sqlRevokedTokenStore(db: SqlRunner): RevokedTokenStore {
  return {
    async add({ id, appId, expiresAt }) {
      return db.transaction(async (tx) => {
        // Writers take turns (SQLite's transactions always do), so that no revocation commits with
        // a seq below one already read: instances read by seq (`since`) and would miss it.
        if (tx.dialect === 'postgres') await tx.run('LOCK TABLE revoked_tokens IN SHARE ROW EXCLUSIVE MODE');
        const inserted = await tx.run(
          'INSERT INTO revoked_tokens (token_id, app_id, expires_at) VALUES (:tokenId, :appId, :expiresAt) ON CONFLICT (token_id) DO NOTHING',
          { tokenId: Buffer.from(id, 'latin1'), appId, expiresAt },
        );
        return inserted > 0 ? (true as const) : undefined;
      });
    },
    since: (seq, limit) => revocationsSince(db, seq, limit),
    async deleteExpired(now, batch) {
      return db.run(
        {
          sqlite: `DELETE FROM revoked_tokens WHERE seq IN
                     (SELECT seq FROM revoked_tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch)`,
          // SKIP LOCKED: instances running housekeeping at once take different rows.
          postgres: `DELETE FROM revoked_tokens WHERE seq IN
                       (SELECT seq FROM revoked_tokens WHERE expires_at IS NOT NULL AND expires_at <= :now LIMIT :batch FOR UPDATE SKIP LOCKED)`,
        },
        { now, batch },
      );
    },
  };
}
