import type { AppAccess } from '../app-access.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { DeveloperLimits } from '../developers/developer-limits.js';
import { describeDeveloper, type DeveloperDescription, type DeveloperRecord } from '../developers/developer.js';
import { checkedEmail, normaliseEmail } from '../developers/email.js';
import { issuedLink, LINK_LIFETIME_MS, type IssuedLink, type OneTimeLinkRecord } from '../developers/one-time-link.js';
import { permissionsOf, type AppAction, type AppPermissions, type AppRole } from '../developers/roles.js';
import { generateSecretToken, parseSecretToken, secretMatches } from '../developers/secret-token.js';
import type { AppMembership, DeveloperStore, RemovedMember } from '../developers/store.js';
import { appNotFound, developerNotFound, invalidLink } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { EventLog } from '../events/log.js';
import { actingDeveloperId, developerDetails, requireOperator, type RequestContext } from '../request-context.js';
import type { AppStore } from './store.js';
import { writeAccountAudit, type AccountTables } from '../developers/account-audit.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import { invitationMail } from '../mail/message.js';
import type { MailOutbox, MailTables } from '../mail/outbox.js';

export interface OwnerChange {
  appId: string;
  owner: DeveloperDescription;
  /** The developer who owned the app before (its id, and its email if it still exists); null if it was the operator's. */
  previousOwner: { id: string; email: string | null } | null;
  /** False if the developer owned the app already (nothing changed). */
  changed: boolean;
}

/** An invitation as its app's owner sees it: never its link's token or hash. */
export interface PendingInvitation {
  id: string;
  email: string;
  /** The developer who invited; null for the operator. */
  invitedBy: string | null;
  /** UNIX ms. */
  createdAt: number;
  expiresAt: number;
}

/** An invitation as the developer who opens its link sees it, before accepting. */
export interface Invitation {
  appName: string;
  /** Whom it is for: only the developer with this email may accept it. */
  email: string;
  /** UNIX ms. */
  expiresAt: number;
}

export interface AcceptedInvitation {
  appId: string;
  role: AppRole;
  /** False if the developer was a member already (the invitation is used up all the same). */
  added: boolean;
}

export interface AppMembersOptions {
  /** The portal's public URL (`PUBLIC_URL`), for whole links; without it, links are paths. */
  publicUrl?: string | undefined;
  /** Called after a change that took authority away (credentials revoked with a member), so that this process's caches drop the app at once. */
  onChange?: (appId: string) => void;
  /** With a mail server (`SMTP_URL`): invitations are mailed too. */
  mail?: MailOutbox | undefined;
}

/** An invitation's link, and whether it was mailed to the address too (`SMTP_URL`). */
export type IssuedInvitation = IssuedLink & { mailed: boolean };

/**
 * Who owns an app and who collaborates on it (`developers/roles.ts`). The operator sets owners (`tessera apps
 * create --owner`, `apps transfer`); an owner invites collaborators with a link it passes on.
 * Every change is an audit event of the app, written with it.
 */
export class AppMembers {
  constructor(
    private readonly store: DeveloperStore,
    private readonly transactions: Transactional<AccountTables & MailTables>,
    private readonly apps: AppStore,
    private readonly clock: Clock,
    private readonly events: EventLog,
    private readonly limits: DeveloperLimits,
    private readonly access: AppAccess,
    private readonly options: AppMembersOptions = {},
  ) {}

  /**
   * What a developer may do on an app, checked before the portal shows anything of it: the
   * developer's role, if it allows `action` (`AppAccess.authorizeDeveloper`: `APP_NOT_FOUND` for an
   * app the developer is no member of, `FORBIDDEN` for a role that does not allow the action).
   */
  async authorize(appId: string, developerId: string, action: AppAction): Promise<AppRole> {
    return this.access.authorizeDeveloper(appId, developerId, action);
  }

  /**
   * What the developer `context` names may do on the app (`AppPermissions`), checked as `authorize`
   * checks `action` first. The role is read once for the request whose context this is: the
   * services the page calls next for the same app read it from there (`AppAccess`).
   */
  async permissions(appId: string, action: AppAction, context: RequestContext): Promise<AppPermissions> {
    const developerId = actingDeveloperId(context);
    if (developerId === undefined) throw new TesseraError('FORBIDDEN', 'Only a developer of the app may do this.');
    return permissionsOf(await this.access.authorizeDeveloper(appId, developerId, action, context));
  }

  /**
   * Makes the developer with this email the app's owner (the operator's `apps create --owner` and
   * `apps transfer`). The previous owner is no longer a member; collaborators stay.
   */
  async setOwner(appId: string, email: string, context: RequestContext): Promise<OwnerChange> {
    // Who asks is checked first: a developer who may not manage the app learns nothing of the email.
    await this.access.authorize(appId, 'manage_collaborators', context);
    const developer = await this.#enabledDeveloper(email);
    const stamp = await this.events.stamp(appId, context);
    const changed = await this.transactions.transaction(async (tx) => {
      const result = await tx.developers.members.setOwner(appId, developer.id, stamp.at);
      // Already its owner: nothing changed, nothing to say.
      if (result === undefined || result.previousOwnerId === developer.id) return result;
      await writeAccountAudit(tx, {
        app: [
          {
            ...stamp,
            type: 'app.owner_changed',
            details: { ...developerDetails(context), ownerId: developer.id, previousOwnerId: result.previousOwnerId },
          },
        ],
      });
      return result;
    });
    if (changed === undefined) {
      if ((await this.apps.findById(appId)) === undefined) throw appNotFound();
      throw developerNotFound();
    }
    const { previousOwnerId } = changed;
    const previous = previousOwnerId === null ? undefined : await this.store.accounts.findById(previousOwnerId);
    return {
      appId,
      owner: describeDeveloper(developer),
      previousOwner: previousOwnerId === null ? null : { id: previousOwnerId, email: previous?.email ?? null },
      changed: previousOwnerId !== developer.id,
    };
  }

  /**
   * A link that makes whoever signs in with this email a collaborator on the app; it replaces an
   * earlier invitation to the app for the same email. The operator or the app's owner; the owner
   * within its limit of invitations (`DeveloperLimits`), taken before the link is made.
   */
  async invite(appId: string, email: string, context: RequestContext): Promise<IssuedInvitation> {
    await this.access.authorize(appId, 'manage_collaborators', context);
    const invitedBy = actingDeveloperId(context) ?? null;
    const invitee = checkedEmail(email);
    // No developer invites: only the operator, without limits, never a context that names nobody.
    if (invitedBy === null) requireOperator(context);
    else await this.limits.takeInvitation(invitedBy, appId, context);
    const stamp = await this.events.stamp(appId, context);
    const secret = generateSecretToken();
    const link: OneTimeLinkRecord = {
      id: secret.id,
      secretHash: secret.secretHash,
      purpose: 'invitation',
      developerId: null,
      appId,
      email: invitee,
      invitedBy,
      createdAt: stamp.at,
      expiresAt: stamp.at + LINK_LIFETIME_MS.invitation,
    };
    const issued = issuedLink('invitation', link.id, secret.token, link.expiresAt, this.options.publicUrl);
    const { mail } = this.options;
    const invitation =
      mail === undefined ? undefined : await this.#invitationMail(mail, appId, invitedBy, invitee, mail.link(issued.path), link.expiresAt);
    const mailed = await this.transactions.transaction(async (tx) => {
      if ((await tx.developers.links.insert(link)) === undefined) throw appNotFound();
      await writeAccountAudit(tx, {
        app: [
          {
            ...stamp,
            type: 'app.collaborator_invited',
            details: { ...developerDetails(context), invitationId: link.id, email: invitee, expiresAt: link.expiresAt },
          },
        ],
      });
      return mail === undefined || invitation === undefined ? false : mail.enqueue(tx, 'invitation', invitation);
    });
    if (mailed) mail?.queued();
    return { ...issued, mailed };
  }

  async #invitationMail(mail: MailOutbox, appId: string, invitedBy: string | null, invitee: string, url: string, expiresAt: number) {
    const [app, inviter] = await Promise.all([
      this.apps.findById(appId),
      invitedBy === null ? undefined : this.store.accounts.findById(invitedBy),
    ]);
    if (app === undefined) throw appNotFound();
    return invitationMail(invitee, app.name, inviter?.email ?? null, url, expiresAt);
  }

  /**
   * The app's invitations not yet accepted and not expired, newest first: the owner's (and the
   * operator's) to see and withdraw.
   */
  async pendingInvitations(appId: string, context: RequestContext): Promise<PendingInvitation[]> {
    await this.access.authorize(appId, 'manage_collaborators', context);
    const links = await this.store.links.invitationsOf(appId, this.clock.now());
    return links.map((link) => ({
      id: link.id,
      email: link.email!,
      invitedBy: link.invitedBy,
      createdAt: link.createdAt,
      expiresAt: link.expiresAt,
    }));
  }

  /**
   * Withdraws an invitation of the app: its link stops working. The operator or the app's owner;
   * `APP_NOT_FOUND` if the app has no such invitation (accepted, expired or withdrawn already).
   */
  async withdrawInvitation(appId: string, invitationId: string, context: RequestContext): Promise<void> {
    await this.access.authorize(appId, 'manage_collaborators', context);
    const link = await this.store.links.findById(invitationId);
    if (link === undefined || link.purpose !== 'invitation' || link.appId !== appId || link.expiresAt <= this.clock.now())
      throw appNotFound();
    const stamp = await this.events.stamp(appId, context);
    await this.transactions.transaction(async (tx) => {
      if ((await tx.developers.links.delete(link.id)) === undefined) throw appNotFound();
      await writeAccountAudit(tx, {
        app: [
          {
            ...stamp,
            type: 'app.invitation_withdrawn',
            details: { ...developerDetails(context), invitationId: link.id, email: link.email },
          },
        ],
      });
    });
  }

  /**
   * The invitation of a token, if it works now, as the portal's page shows it to whoever opens the
   * link: the app's name, which a developer who is no member yet learns only this way, and not
   * another thing of the app. `INVALID_LINK` otherwise. Does not use it up.
   */
  async invitation(token: string): Promise<Invitation> {
    const link = await this.#workingInvitation(token);
    const app = await this.apps.findById(link.appId!);
    // Deleting an app deletes its invitations: one found just before is no longer one.
    if (app === undefined) throw invalidLink();
    return { appName: app.name, email: link.email!, expiresAt: link.expiresAt };
  }

  async #workingInvitation(token: string): Promise<OneTimeLinkRecord> {
    const presented = parseSecretToken(token);
    if (presented === undefined) throw invalidLink();
    const link = await this.store.links.findById(presented.id);
    if (
      link === undefined ||
      !secretMatches(presented, link.secretHash) ||
      link.purpose !== 'invitation' ||
      link.expiresAt <= this.clock.now()
    ) {
      throw invalidLink();
    }
    return link;
  }

  /**
   * Uses up the invitation and makes the developer a collaborator. Only for the developer the
   * invitation names by email: a forwarded or leaked link is of no use to another account.
   */
  async acceptInvitation(token: string, developer: DeveloperRecord, context: RequestContext): Promise<AcceptedInvitation> {
    const link = await this.#workingInvitation(token);
    if (link.email !== developer.email) {
      throw new TesseraError('FORBIDDEN', 'This invitation is for another email address: sign in with that address to accept it.');
    }
    const stamp = await this.events.stamp(link.appId!, context);
    return this.transactions.transaction(async (tx) => {
      const accepted = await tx.developers.members.acceptInvitation(link.id, developer.id, stamp.at);
      if (accepted === undefined) throw invalidLink();
      const { role, added } = accepted;
      await writeAccountAudit(tx, {
        app: added
          ? [
              {
                ...stamp,
                type: 'app.collaborator_added',
                details: { ...developerDetails(context), developerId: developer.id, invitationId: link.id, role },
              },
            ]
          : [],
      });
      return accepted;
    });
  }

  /**
   * Removes a collaborator: the operator, the owner, or the collaborator itself (leaving). The
   * owner is not removed this way: the operator transfers the app instead.
   */
  async removeCollaborator(appId: string, developerId: string, context: RequestContext): Promise<RemovedMember> {
    const leaving = actingDeveloperId(context) === developerId;
    await this.access.authorize(appId, leaving ? 'view_app' : 'manage_collaborators', context);
    const role = await this.store.members.roleOf(appId, developerId);
    if (role === undefined) throw appNotFound();
    if (role === 'owner')
      throw new TesseraError('invalid_request', 'The owner is not removed: transfer the app to another developer instead.');
    const stamp = await this.events.stamp(appId, context);
    const removed = await this.transactions.transaction(async (tx) => {
      const member = await tx.developers.members.remove(appId, developerId);
      if (member === undefined) throw appNotFound();
      await writeAccountAudit(tx, {
        app: [
          { ...stamp, type: 'app.collaborator_removed', details: { ...developerDetails(context), developerId, role: member.role } },
          ...member.credentialsRevoked.map(({ clientId, name, madeBy, tokensRevoked }) => ({
            ...stamp,
            type: 'credential.revoked' as const,
            details: {
              clientId,
              name,
              tokensRevoked,
              // Made by the developer removed, or by a credential of theirs.
              ...(madeBy === null ? { madeByDeveloperId: developerId } : { madeBy }),
              ...developerDetails(context),
            },
          })),
        ],
      });
      return member;
    });
    if (removed.credentialsRevoked.length > 0) this.options.onChange?.(appId);
    return removed;
  }

  /** The app's members, the owner first: for whoever may see the app. */
  async membersOf(appId: string, context: RequestContext): Promise<AppMembership[]> {
    await this.access.authorize(appId, 'view_app', context);
    return this.store.members.ofApp(appId);
  }

  /** The apps the developer is a member of. */
  async appsOf(developerId: string): Promise<AppMembership[]> {
    return this.store.members.ofDeveloper(developerId);
  }

  async #enabledDeveloper(email: string): Promise<DeveloperRecord> {
    const normalised = normaliseEmail(email);
    const developer = normalised === undefined ? undefined : await this.store.accounts.findByEmail(normalised);
    if (developer === undefined) throw developerNotFound();
    if (developer.disabledAt !== null) throw new TesseraError('invalid_request', 'This developer is disabled: choose another one.');
    return developer;
  }
}
