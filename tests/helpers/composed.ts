import type { AppConfiguration, AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { DeletedApp, NewImportedApp } from '../../src/apps/store.js';
import type { RevocationKind } from '../../src/apps/revoke-all.js';
import type { NewDeveloperEvent } from '../../src/developers/events.js';
import type { NewAuditEvent } from '../../src/events/event.js';
import { claimOnce, type OnceClaim } from '../../src/once-claims.js';
import type { Store, StoreTables } from '../../src/store/store.js';
import { writeAccountAudit } from '../../src/developers/account-audit.js';
import type { DeveloperRecord } from '../../src/developers/developer.js';
import type { AccountAudit } from '../../src/developers/events.js';
import type { OneTimeLinkRecord } from '../../src/developers/one-time-link.js';
import type { AppRole } from '../../src/developers/roles.js';
import type { SessionRecord } from '../../src/developers/session.js';
import type { RemovedMember } from '../../src/developers/store.js';

/** The audit events of a change, built from what it wrote. */
export type AuditOf<Result> = (result: Result) => NewAuditEvent[];

/**
 * The changes as the services compose them in one transaction (`Store.transaction`): the lock, the
 * rule (a limit, a once value), the write and the events `audit` builds of what was written. The
 * store suites test the transactions with them: all of a change is written, or none of it. A once
 * value claimed before throws `CONFLICT` (`claimOnce`); what was not found is undefined.
 */

/** What a rotation did besides: the admin tokens it removed (0 unless asked for). */
export interface SecretRotation {
  adminTokensRevoked: number;
}

/** As `AppService.create` with an owner: undefined if there is no such enabled developer; `inserted` false at its limit. */
export function insertOwned(
  store: Store,
  app: AppRecord,
  { developerId, maxOwnedApps, once }: { developerId: string; maxOwnedApps: number | null; once?: OnceClaim },
  audit: AuditOf<void>,
): Promise<{ inserted: boolean; ownedApps: number } | undefined> {
  return store.transaction(async (tx) => {
    if ((await tx.developers.accounts.lockEnabled(developerId, 'NO KEY UPDATE')) === undefined) return undefined;
    const ownedApps = await tx.developers.members.countOwned(developerId);
    if (maxOwnedApps !== null && ownedApps >= maxOwnedApps) return { inserted: false, ownedApps };
    await claimOnce(tx.onceClaims, once);
    await tx.apps.insert(app);
    await tx.developers.members.insertOwner(app.appId, developerId, app.createdAt);
    await tx.events.append(audit());
    return { inserted: true, ownedApps };
  });
}

/** As `AppImports.importApps`: false if an owner does not exist or is disabled. */
export function insertMany(store: Store, apps: readonly NewImportedApp[], audit: AuditOf<void>): Promise<boolean> {
  return store.transaction(async (tx) => {
    if ((await tx.apps.insertMany(apps)) === undefined) return false;
    await tx.events.append(audit());
    return true;
  });
}

/** As `AppService.rotateSecret`. */
export function rotateClientSecret(
  store: Store,
  appId: string,
  hash: Buffer,
  {
    revokeAdminTokens,
    previousSecretValidUntil,
    once,
  }: { revokeAdminTokens: boolean; previousSecretValidUntil: number | null; once?: OnceClaim },
  audit: AuditOf<SecretRotation>,
): Promise<SecretRotation | undefined> {
  return store.transaction(async (tx) => {
    if ((await tx.apps.rotateClientSecret(appId, hash, previousSecretValidUntil)) === undefined) return undefined;
    await claimOnce(tx.onceClaims, once);
    const rotation = { adminTokensRevoked: revokeAdminTokens ? await tx.tokens.deleteOfApp(appId, 'admin') : 0 };
    await tx.events.append(audit(rotation));
    return rotation;
  });
}

/** As `AppService.configure`. */
export function updateConfiguration(
  store: Store,
  appId: string,
  changes: Partial<AppConfiguration>,
  audit: AuditOf<AppRecord>,
): Promise<AppRecord | undefined> {
  return store.transaction(async (tx) => {
    const updated = await tx.apps.updateConfiguration(appId, changes);
    if (updated !== undefined) await tx.events.append(audit(updated));
    return updated;
  });
}

/** As `AppService.allowOrigin`: the changes computed from the app as it is, its row held. */
export function changeConfiguration(
  store: Store,
  appId: string,
  change: (current: AppConfiguration) => Partial<AppConfiguration> | null,
  audit: AuditOf<AppRecord>,
): Promise<{ app: AppRecord; changed: boolean } | undefined> {
  return store.transaction(async (tx) => {
    const app = await tx.apps.findLocked(appId, 'NO KEY UPDATE');
    if (app === undefined) return undefined;
    const changes = change(app.configuration);
    if (changes === null) return { app, changed: false };
    await tx.apps.patchConfiguration(appId, changes);
    const updated = { ...app, configuration: { ...app.configuration, ...changes } };
    await tx.events.append(audit(updated));
    return { app: updated, changed: true };
  });
}

/** As `AppService.delete`: false if there is no such app. */
export function deleteApp(store: Store, appId: string, audit: (deleted: DeletedApp) => NewDeveloperEvent[]): Promise<boolean> {
  return store.transaction(async (tx) => {
    const deleted = await tx.apps.delete(appId);
    if (deleted === undefined) return false;
    await tx.developers.accounts.appendEvents(audit(deleted));
    return true;
  });
}

/** As `TokenRevoker.revokeAll`: how many stored tokens were removed. */
export function revokeAll(store: Store, appId: string, kind: RevocationKind, at: number, audit: AuditOf<number>): Promise<number> {
  return store.transaction(async (tx) => {
    const removed = await tx.tokens.revokeAll(appId, kind, at);
    await tx.events.append(audit(removed));
    return removed;
  });
}

/** The events of an account change, built from what it wrote. */
export type AccountAuditOf<Result> = (result: Result) => AccountAudit;

/** An account change and the events `audit` builds of what it wrote, unless it wrote nothing (undefined). */
function accountChange<Result>(
  store: Store,
  change: (tx: StoreTables) => Promise<Result | undefined>,
  audit: AccountAuditOf<Result>,
): Promise<Result | undefined> {
  return store.transaction(async (tx) => {
    const result = await change(tx);
    if (result !== undefined) await writeAccountAudit(tx, audit(result));
    return result;
  });
}

/** As `DeveloperAccounts.create`: the developer, its set-password link, and their events. */
export async function insertDeveloper(
  store: Store,
  developer: DeveloperRecord,
  link: OneTimeLinkRecord | null,
  audit: AccountAuditOf<void>,
): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.developers.accounts.insert(developer);
    if (link !== null) await tx.developers.links.insert(link);
    await writeAccountAudit(tx, audit());
  });
}

/** As `DeveloperAccounts.setPasswordWithLink` (with `linkId`, used up with it) and `changePassword`. */
export function setPassword(
  store: Store,
  developerId: string,
  passwordHash: string,
  { linkId }: { linkId: string | null },
  audit: AccountAuditOf<{ sessionsEnded: number }>,
): Promise<{ sessionsEnded: number } | undefined> {
  const rolledBack = new Error('rolled back');
  return store
    .transaction(async (tx) => {
      if (linkId !== null && (await tx.developers.links.usePasswordLink(linkId, developerId)) === undefined) return undefined;
      const set = await tx.developers.accounts.setPassword(developerId, passwordHash);
      if (set === undefined) throw rolledBack;
      await writeAccountAudit(tx, audit(set));
      return set;
    })
    .catch((error: unknown) => {
      if (error === rolledBack) return undefined;
      throw error;
    });
}

/** As `DeveloperAccounts.disable`. */
export function disableDeveloper(
  store: Store,
  developerId: string,
  at: number,
  audit: AccountAuditOf<{ sessionsEnded: number }>,
): Promise<{ sessionsEnded: number } | undefined> {
  return accountChange(store, (tx) => tx.developers.accounts.disable(developerId, at), audit);
}

/** As `DeveloperSessions.start`. */
export function insertSession(store: Store, session: SessionRecord, audit: AccountAuditOf<void>): Promise<true | undefined> {
  return accountChange(
    store,
    (tx) => tx.developers.sessions.insert(session),
    () => audit(),
  );
}

/** As `DeveloperSessions.signOut`: false if there was no such session. */
export async function deleteSession(store: Store, id: string, audit: AccountAuditOf<void>): Promise<boolean> {
  return (
    (await accountChange(
      store,
      (tx) => tx.developers.sessions.delete(id),
      () => audit(),
    )) !== undefined
  );
}

/** As `DeveloperAccounts.issueResetLink` and `AppMembers.invite`. */
export function insertLink(store: Store, link: OneTimeLinkRecord, audit: AccountAuditOf<void>): Promise<true | undefined> {
  return accountChange(
    store,
    (tx) => tx.developers.links.insert(link),
    () => audit(),
  );
}

/** As `AppMembers.withdrawInvitation`: false if there was no such link. */
export async function deleteLink(store: Store, id: string, audit: AccountAuditOf<void>): Promise<boolean> {
  return (
    (await accountChange(
      store,
      (tx) => tx.developers.links.delete(id),
      () => audit(),
    )) !== undefined
  );
}

/** As `AppMembers.setOwner`: no events when the developer owned the app already. */
export function setOwner(
  store: Store,
  appId: string,
  developerId: string,
  at: number,
  audit: AccountAuditOf<{ previousOwnerId: string | null }>,
): Promise<{ previousOwnerId: string | null } | undefined> {
  return store.transaction(async (tx) => {
    const result = await tx.developers.members.setOwner(appId, developerId, at);
    if (result !== undefined && result.previousOwnerId !== developerId) await writeAccountAudit(tx, audit(result));
    return result;
  });
}

/** As `AppMembers.acceptInvitation`. */
export function acceptInvitation(
  store: Store,
  linkId: string,
  developerId: string,
  at: number,
  audit: AccountAuditOf<{ appId: string; role: AppRole; added: boolean }>,
): Promise<{ appId: string; role: AppRole; added: boolean } | undefined> {
  return accountChange(store, (tx) => tx.developers.members.acceptInvitation(linkId, developerId, at), audit);
}

/** As `AppMembers.removeCollaborator`. */
export function removeMember(
  store: Store,
  appId: string,
  developerId: string,
  audit: AccountAuditOf<RemovedMember>,
): Promise<RemovedMember | undefined> {
  return accountChange(store, (tx) => tx.developers.members.remove(appId, developerId), audit);
}
