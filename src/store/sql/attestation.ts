import type { AttestationStore, DebugTokenRecord } from '../../attestation/store.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

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

export function sqlAttestationStore(db: SqlRunner): AttestationStore {
  return {
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
    async touchDebugToken(id, at) {
      await db.run(
        'UPDATE attestation_debug_tokens SET last_used_at = :at WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :before)',
        { id, at, before: at - 60_000 },
      );
    },
  };
}
