import type { CredentialCreator } from 'tessera-tokens/internal/credentials/credential.js';
import type { CredentialStore, RevokedCredentialRecord } from '../../credentials/store.js';
import { withdrawAdminGrants } from './admin-grants.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

function creatorId(creator: CredentialCreator): string | null {
  return creator.kind === 'developer' ? creator.developerId : creator.kind === 'admin' ? creator.clientId : null;
}

/** Removes the tokens issued from one credential of the app, among the app's (`tokens_by_app`), in the caller's transaction; returns how many. */
async function deleteTokensOfCredential(tx: SqlRunner, appId: string, clientId: string): Promise<number> {
  return tx.run('DELETE FROM tokens WHERE app_id = :appId AND client_id = :clientId', { appId, clientId });
}

/**
 * Credentials of the app (those `roots` names: one by its ClientID, or those a developer made in the
 * portal), and every credential their admin tokens made, and theirs in turn, the roots first: what
 * revoking them revokes.
 */
const WITH_WHAT_THEY_MADE = (roots: string) => `
  WITH RECURSIVE revoked (client_id, depth) AS (
    SELECT client_id, 0 FROM credentials WHERE app_id = :appId AND ${roots}
    UNION
    SELECT made.client_id, revoked.depth + 1 FROM credentials made
      JOIN revoked ON made.created_by = 'admin' AND made.created_by_id = revoked.client_id
    WHERE made.app_id = :appId AND revoked.depth < 50
  )
  SELECT credentials.client_id, credentials.name, credentials.created_by_id, revoked.depth
  FROM credentials JOIN revoked ON revoked.client_id = credentials.client_id
  ORDER BY revoked.depth, credentials.created_at, credentials.client_id`;

const REVOKED_WITH_ONE = WITH_WHAT_THEY_MADE('client_id = :clientId');
const REVOKED_WITH_DEVELOPERS = WITH_WHAT_THEY_MADE("created_by = 'developer' AND created_by_id = :developerId");

/**
 * Revokes, in the caller's transaction, the credentials `roots` names and all they made
 * (`WITH_WHAT_THEY_MADE`), with every token issued from them; returns what was revoked, the roots
 * first (none: nothing written).
 */
export async function revokeCredentials(
  tx: SqlRunner,
  appId: string,
  roots: { clientId: string } | { developerId: string },
): Promise<RevokedCredentialRecord[]> {
  const found = await tx.all<{ client_id: string; name: string; created_by_id: string | null; depth: number }>(
    'clientId' in roots ? REVOKED_WITH_ONE : REVOKED_WITH_DEVELOPERS,
    { appId, ...roots },
  );
  if (found.length === 0) return [];
  await withdrawAdminGrants(tx, appId);
  const revoked: RevokedCredentialRecord[] = [];
  for (const row of found) {
    await tx.run('DELETE FROM credentials WHERE app_id = :appId AND client_id = :clientId', { appId, clientId: row.client_id });
    const tokensRevoked = await deleteTokensOfCredential(tx, appId, row.client_id);
    revoked.push({ clientId: row.client_id, name: row.name, madeBy: row.depth === 0 ? null : row.created_by_id, tokensRevoked });
  }
  return revoked;
}

export function sqlCredentialStore(db: SqlRunner): CredentialStore {
  return {
    async countOf(appId) {
      return (await db.get<{ n: number }>('SELECT count(*) AS n FROM credentials WHERE app_id = :appId', { appId }))?.n ?? 0;
    },
    async insert(credential) {
      await db.run(
        `INSERT INTO credentials (client_id, app_id, name, scopes, expires_at, allow_from, secret_hash, created_at, created_by, created_by_id,
                                  access_token_format)
         VALUES (:clientId, :appId, :name, :scopes, :expiresAt, :allowFrom, :secretHash, :createdAt, :createdBy, :createdById,
                 :accessTokenFormat)`,
        {
          clientId: credential.clientId,
          appId: credential.appId,
          name: credential.name,
          scopes: credential.scopes.join(' '),
          expiresAt: credential.expiresAt,
          allowFrom: credential.allowFrom.join(' '),
          secretHash: credential.secretHash,
          createdAt: credential.createdAt,
          createdBy: credential.createdBy.kind,
          createdById: creatorId(credential.createdBy),
          accessTokenFormat: credential.accessTokenFormat,
        },
      );
    },
    async rotate(appId, clientId, secretHash, previousSecretValidUntil) {
      return db.transaction(async (tx) => {
        // The right-hand sides read the row as it was: the replaced hash becomes the previous one.
        const updated = await tx.run(
          `UPDATE credentials SET previous_secret_hash = CASE WHEN CAST(:validUntil AS BIGINT) IS NULL THEN NULL ELSE secret_hash END,
                                  previous_secret_valid_until = :validUntil,
                                  secret_hash = :secretHash
           WHERE app_id = :appId AND client_id = :clientId`,
          { appId, clientId, secretHash, validUntil: previousSecretValidUntil },
        );
        if (updated === 0) return undefined;
        await withdrawAdminGrants(tx, appId);
        return true as const;
      });
    },
    async delete(appId, clientId) {
      return db.transaction(async (tx) => {
        const revoked = await revokeCredentials(tx, appId, { clientId });
        return revoked.length === 0 ? undefined : revoked;
      });
    },
    async endPreviousSecret(appId, clientId, now) {
      return db.transaction(async (tx) => {
        const read = () =>
          tx.get<{ until: number | null }>(
            'SELECT previous_secret_valid_until AS until FROM credentials WHERE app_id = :appId AND client_id = :clientId',
            { appId, clientId },
          );
        const seen = await read();
        if (seen === undefined) return undefined;
        if (seen.until === null || seen.until <= now) return { validUntil: null };
        await withdrawAdminGrants(tx, appId);
        // Read again under the app's lock: a rotation (or revocation) meanwhile changed it.
        const row = await read();
        if (row === undefined || row.until === null || row.until <= now) return { validUntil: null };
        await tx.run(
          `UPDATE credentials SET previous_secret_hash = NULL, previous_secret_valid_until = NULL
           WHERE app_id = :appId AND client_id = :clientId`,
          { appId, clientId },
        );
        return { validUntil: row.until };
      });
    },
    async markUsed(clientId, at, minIntervalMs) {
      // Conditional, so that instances using one credential write it at most once a minute between them.
      await db.run(
        `UPDATE credentials SET last_used_at = :at
         WHERE client_id = :clientId AND (last_used_at IS NULL OR last_used_at <= :before)`,
        { clientId, at, before: at - minIntervalMs },
      );
    },
  };
}
