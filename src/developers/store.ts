import type { DeveloperRecord } from './developer.js';
import type { DeveloperEvent, NewDeveloperEvent } from './events.js';
import type { OneTimeLinkRecord } from './one-time-link.js';
import type { RevokedCredentialRecord } from '../credentials/store.js';
import type { AppRole } from './roles.js';
import type { SessionRecord } from './session.js';

/** A member removed from an app: its role, and the credentials it had made there, revoked with it. */
export interface RemovedMember {
  role: AppRole;
  credentialsRevoked: RevokedCredentialRecord[];
}

/**
 * The storage seam of developer accounts, their sessions and one-time links, and app memberships;
 * one SQL implementation over both dialects (`src/store/sql/developers.ts`). Its methods take and
 * give plain records, undefined when nothing was written; a change and the audit events that
 * describe it are written together by the service, in one transaction (`Store.transaction`,
 * `writeAccountAudit`). A method that writes several statements runs them in the transaction it is
 * called in, or in one of its own.
 */
export interface DeveloperStore {
  readonly accounts: DeveloperAccountStore;
  readonly sessions: DeveloperSessionStore;
  readonly links: OneTimeLinkStore;
  readonly members: AppMemberStore;
}

export interface DeveloperAccountStore {
  /** Inserts the developer. Throws `StoreConflictError` if the email (or id) is taken. */
  insert(developer: DeveloperRecord): Promise<void>;
  findById(id: string): Promise<DeveloperRecord | undefined>;
  findByEmail(email: string): Promise<DeveloperRecord | undefined>;
  /**
   * Holds the enabled developer's row until the transaction ends (`Store.transaction`): PostgreSQL's
   * `FOR NO KEY UPDATE` makes the transactions that lock it so take turns (rows that merely refer to
   * it, its sessions and events, are written meanwhile), `FOR SHARE` keeps it from being disabled;
   * SQLite's write transactions take turns anyway. True, or undefined if there is no such enabled developer.
   */
  lockEnabled(developerId: string, mode: 'NO KEY UPDATE' | 'SHARE'): Promise<true | undefined>;
  /** Oldest first. */
  list(): Promise<DeveloperRecord[]>;
  /**
   * Sets the password's hash, ends every session of the developer and removes every password link
   * of it (a link issued before a change must not undo it). Undefined (nothing written) if there
   * is no such enabled developer.
   */
  setPassword(developerId: string, passwordHash: string): Promise<{ sessionsEnded: number } | undefined>;
  /** Replaces `previousHash` by `passwordHash` (the same password, today's parameters); undefined (nothing written) if it changed meanwhile. */
  rehashPassword(developerId: string, previousHash: string, passwordHash: string): Promise<true | undefined>;
  /**
   * Disables the developer at `at`, ends every session and removes every password link of it.
   * Undefined (nothing written) if there is no such developer or it is disabled already.
   */
  disable(developerId: string, at: number): Promise<{ sessionsEnded: number } | undefined>;
  /** Deletes the developer with its sessions, links, memberships and account events; undefined (nothing written) if there is none. */
  delete(developerId: string): Promise<true | undefined>;
  /**
   * Writes account events, of a change in the transaction it is written in (`writeAccountAudit`)
   * or of none (a limit's refusal), each developer keeping its newest `MAX_EVENTS_PER_DEVELOPER`.
   */
  appendEvents(batch: NewDeveloperEvent[]): Promise<void>;
  /** The developer's account events, newest first. */
  listEvents(developerId: string, limit: number): Promise<DeveloperEvent[]>;
  /** Deletes up to `batch` of the account events recorded before `cutoff` (UNIX ms); returns how many. */
  deleteEventsOlderThan(cutoff: number, batch: number): Promise<number>;
}

export interface DeveloperSessionStore {
  /** Inserts the session; undefined (nothing written) unless its developer exists and is enabled. */
  insert(session: SessionRecord): Promise<true | undefined>;
  findById(id: string): Promise<SessionRecord | undefined>;
  /** Writes when the session was last seen and its new expiry. */
  touch(id: string, lastSeenAt: number, expiresAt: number): Promise<void>;
  /** Ends the session; undefined (nothing written) if there is none. */
  delete(id: string): Promise<true | undefined>;
  /** How many sessions of the developer have not expired at `now`. */
  countOf(developerId: string, now: number): Promise<number>;
  /** Deletes up to `batch` sessions that expired at or before `now`; returns how many. */
  deleteExpired(now: number, batch: number): Promise<number>;
}

export interface OneTimeLinkStore {
  /**
   * Inserts the link and removes the older ones it replaces: a password link replaces the
   * developer's other password links; an invitation, the app's other invitation for the same email.
   * Undefined (nothing written) if its developer or app does not exist, or its developer is disabled.
   */
  insert(link: OneTimeLinkRecord): Promise<true | undefined>;
  findById(id: string): Promise<OneTimeLinkRecord | undefined>;
  /**
   * Uses up the developer's set-password or reset link (deletes it): true, or undefined (nothing
   * written) if it is gone (used, replaced, expired and removed).
   */
  usePasswordLink(id: string, developerId: string): Promise<true | undefined>;
  /** The app's invitations that have not expired at `now`, newest first. */
  invitationsOf(appId: string, now: number): Promise<OneTimeLinkRecord[]>;
  /** Removes the link (an invitation withdrawn); undefined (nothing written) if there is none. */
  delete(id: string): Promise<true | undefined>;
  /** Deletes up to `batch` links that expired at or before `now`; returns how many. */
  deleteExpired(now: number, batch: number): Promise<number>;
}

/** A developer's place on an app. */
export interface AppMembership {
  appId: string;
  developerId: string;
  /** The developer's email, for listing an app's members. */
  email: string;
  role: AppRole;
  /** UNIX ms. */
  addedAt: number;
}

export interface AppMemberStore {
  /**
   * Makes the developer the app's owner, at `at`, the app's row locked (`FOR UPDATE`: owner changes
   * of one app take turns) and the developer's held against a disabling. The previous owner, if
   * another, is no longer a member; if the developer was a collaborator, it is the owner now.
   * Undefined (nothing written) if there is no such app or no such enabled developer.
   */
  setOwner(appId: string, developerId: string, at: number): Promise<{ previousOwnerId: string | null } | undefined>;
  /**
   * Uses up the invitation and makes the developer a collaborator of its app (a member already
   * keeps the role it has), at `at`. Undefined (nothing written) if the invitation is gone, or the
   * developer does not exist or is disabled.
   */
  acceptInvitation(linkId: string, developerId: string, at: number): Promise<{ appId: string; role: AppRole; added: boolean } | undefined>;
  /**
   * Removes the developer from the app, and revokes the credentials it made there in the portal
   * (and what they made: `CredentialStore.delete`): the role it had and what was
   * revoked, or undefined (nothing written) if it was no member.
   */
  remove(appId: string, developerId: string): Promise<RemovedMember | undefined>;
  roleOf(appId: string, developerId: string): Promise<AppRole | undefined>;
  /** How many apps the developer owns. */
  countOwned(developerId: string): Promise<number>;
  /** Makes the developer the owner of a new app, which has no member yet, at `at`. */
  insertOwner(appId: string, developerId: string, at: number): Promise<void>;
  /** The app's members, the owner first, then by when they were added. */
  ofApp(appId: string): Promise<AppMembership[]>;
  /** The apps the developer is a member of, by when it was added. */
  ofDeveloper(developerId: string): Promise<AppMembership[]>;
}
