import { withRowLock, type SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

/**
 * Also says, for the transaction, that this change is counted here (`tessera.withdrawn`): the
 * triggers that count the changes release 0.1.0 makes (migration 12) then leave it be.
 */
const LOCK_APP_AGAINST_ISSUANCE = withRowLock(
  "SELECT set_config('tessera.withdrawn', 'on', true) AS found FROM apps WHERE app_id = :appId",
  'UPDATE',
);

/**
 * Takes admin authority away, in the caller's transaction, before it changes a secret or removes
 * tokens: counts one more admin generation of the app (`AppRecord.adminGeneration`), which every
 * token insert authenticated against the app as it was then finds changed, and inserts nothing
 * (`GUARDED_TOKEN_INSERT`). On PostgreSQL, the app's row is locked FOR UPDATE first: a token insert
 * holds it FOR KEY SHARE, so either that insert commits first, and the statements of the caller that
 * follow see its token (READ COMMITTED reads anew at each statement), or it waits for the caller's
 * commit and then finds the generation changed. An UPDATE alone (FOR NO KEY UPDATE) would not wait
 * for it. SQLite's write transactions take turns anyway. False, with nothing changed, if there is no
 * such app.
 */
export async function withdrawAdminGrants(tx: SqlRunner, appId: string): Promise<boolean> {
  if (tx.dialect === 'postgres' && (await tx.get(LOCK_APP_AGAINST_ISSUANCE, { appId })) === undefined) return false;
  return (await tx.run('UPDATE apps SET admin_generation = admin_generation + 1 WHERE app_id = :appId', { appId })) > 0;
}
