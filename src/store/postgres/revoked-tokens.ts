import type pg from 'pg';
import type { RevokedTokenStore, StoredRevocation } from '../../tokens/revoked-tokens.js';
import type { PostgresQueries } from './connection.js';

interface RevocationRow {
  seq: string;
  token_id: Buffer;
  app_id: string;
  expires_at: string | null;
}

/** Removes the app's single revocations, on the connection of a transaction. */
export async function deleteRevokedTokensOfApp(client: pg.PoolClient, appId: string): Promise<void> {
  await client.query('DELETE FROM revoked_tokens WHERE app_id = $1', [appId]);
}

export function postgresRevokedTokenStore(db: PostgresQueries): RevokedTokenStore {
  return {
    async add({ id, appId, expiresAt }) {
      return db.transaction(async (client) => {
        // Writers take turns, so that no revocation commits with a seq below one already read:
        // instances read by seq (`since`) and would miss it.
        await client.query('LOCK TABLE revoked_tokens IN SHARE ROW EXCLUSIVE MODE');
        const result = await client.query(
          'INSERT INTO revoked_tokens (token_id, app_id, expires_at) VALUES ($1, $2, $3) ON CONFLICT (token_id) DO NOTHING',
          [Buffer.from(id, 'latin1'), appId, expiresAt],
        );
        return (result.rowCount ?? 0) > 0;
      });
    },
    async since(seq, limit) {
      const result = await db.query<RevocationRow>({
        name: 'tessera-revocations-since',
        text: 'SELECT * FROM revoked_tokens WHERE seq > $1 ORDER BY seq LIMIT $2',
        values: [seq, limit],
      });
      return result.rows.map(toRevocation);
    },
    async deleteExpired(now, batch) {
      const result = await db.query({
        text: `DELETE FROM revoked_tokens WHERE seq IN
                 (SELECT seq FROM revoked_tokens WHERE expires_at IS NOT NULL AND expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        values: [now, batch],
      });
      return result.rowCount ?? 0;
    },
  };
}

function toRevocation(row: RevocationRow): StoredRevocation {
  return { seq: Number(row.seq), id: row.token_id.toString('latin1'), appId: row.app_id, expiresAt: row.expires_at === null ? null : Number(row.expires_at) };
}
