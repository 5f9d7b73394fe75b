import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';
import { JWT_KEY_COLUMNS, listJwtKeys } from 'tessera-tokens/internal/store/sql/jwt-key-reads.js';
import type { JwtKeyStore, StatusListStore } from '../../jwt/store.js';

/** The JWT keys over one runner (`jwt_keys`). */
export function sqlJwtKeyStore(db: SqlRunner): JwtKeyStore {
  return {
    listJwtKeys: () => listJwtKeys(db),
    async insertJwtKey(key) {
      await db.run(
        `INSERT INTO jwt_keys (${JWT_KEY_COLUMNS}) VALUES (:kid, :algorithm, :publicJwk, :privateKey, :createdAt, :signsFrom, :publishedUntil)`,
        {
          kid: key.kid,
          algorithm: key.algorithm,
          publicJwk: JSON.stringify(key.publicJwk),
          privateKey: key.encryptedPrivateKey,
          createdAt: key.createdAt,
          signsFrom: key.signsFrom,
          publishedUntil: key.publishedUntil,
        },
      );
    },
    async supersede(kid, publishedUntil) {
      await db.run(
        `UPDATE jwt_keys SET published_until = :publishedUntil
          WHERE published_until IS NULL AND kid <> :kid
            AND created_at <= (SELECT created_at FROM jwt_keys WHERE kid = :kid)`,
        { kid, publishedUntil },
      );
    },
    async erasePrivateKeys(now) {
      return db.run(
        `UPDATE jwt_keys SET private_key = NULL
          WHERE private_key IS NOT NULL
            AND EXISTS (SELECT 1 FROM jwt_keys newer
                         WHERE newer.created_at > jwt_keys.created_at AND newer.signs_from <= :now AND newer.private_key IS NOT NULL)`,
        { now },
      );
    },
    async retireJwtKey(kid, at) {
      const changed = await db.run(
        `UPDATE jwt_keys SET published_until = :at, private_key = NULL
          WHERE kid = :kid AND (published_until IS NULL OR published_until > :at)`,
        { kid, at },
      );
      return changed > 0 ? true : undefined;
    },
    async deleteUnpublishedJwtKeys(now) {
      return db.run('DELETE FROM jwt_keys WHERE published_until IS NOT NULL AND published_until <= :now', { now });
    },
  };
}

/** The Token Status Lists over one runner (`status_list_blocks`, `status_list_next`, `status_list_revocations`). */
export function sqlStatusListStore(db: SqlRunner): StatusListStore {
  return {
    async reserveBlock(block) {
      return db.transaction(async (tx) => {
        // Aligned to its size (a power of two): a block never spans two lists. (Integer division in both
        // dialects: SQLite divides a bound number as a real unless it is cast.)
        const row = await tx.get<{ first: number }>(
          `UPDATE status_list_next SET next_index = ((next_index + CAST(:size AS INTEGER) - 1) / CAST(:size AS INTEGER) + 1) * CAST(:size AS INTEGER)
            WHERE id = 1 RETURNING next_index - CAST(:size AS INTEGER) AS first`,
          { size: block.size },
        );
        const firstIndex = Number(row!.first);
        await tx.run(
          `INSERT INTO status_list_blocks (first_index, size, app_id, kind, reserved_at, expires_by)
           VALUES (:firstIndex, :size, :appId, :kind, :reservedAt, :expiresBy)`,
          { ...block, firstIndex },
        );
        return firstIndex;
      });
    },
    async revokeIndex(index, expiresAt) {
      await db.run(
        `INSERT INTO status_list_revocations (status_index, expires_at) VALUES (:index, :expiresAt)
         ON CONFLICT (status_index) DO NOTHING`,
        { index, expiresAt },
      );
    },
    async contents(from, to, now) {
      const blocks = await db.all<{ first_index: number; size: number; revoked: number }>(
        `SELECT b.first_index, b.size,
                CASE WHEN a.app_id IS NULL
                       OR (b.kind = 'anonymous' AND a.anonymous_cutoff IS NOT NULL AND a.anonymous_cutoff >= b.reserved_at)
                     THEN 1 ELSE 0 END AS revoked
           FROM status_list_blocks b LEFT JOIN apps a ON a.app_id = b.app_id
          WHERE b.first_index >= :from AND b.first_index < :to AND b.expires_by > :now`,
        { from, to, now },
      );
      const revoked = await db.all<{ status_index: number }>(
        `SELECT status_index FROM status_list_revocations
          WHERE status_index >= :from AND status_index < :to AND expires_at > :now ORDER BY status_index`,
        { from, to, now },
      );
      return {
        revokedBlocks: blocks
          .filter((block) => Number(block.revoked) === 1)
          .map((block) => ({ firstIndex: Number(block.first_index), size: Number(block.size) })),
        revokedIndexes: revoked.map((row) => Number(row.status_index)),
        inUse: blocks.length > 0,
      };
    },
    async deleteExpiredStatus(now, batch) {
      const blocks = await db.run(
        `DELETE FROM status_list_blocks WHERE first_index IN
           (SELECT first_index FROM status_list_blocks WHERE expires_by <= :now LIMIT :batch)`,
        { now, batch },
      );
      const revocations = await db.run(
        `DELETE FROM status_list_revocations WHERE status_index IN
           (SELECT status_index FROM status_list_revocations WHERE expires_at <= :now LIMIT :batch)`,
        { now, batch },
      );
      return blocks + revocations;
    },
  };
}
