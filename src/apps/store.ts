import type { MaybePromise } from '../maybe-promise.js';
import type { NewDeveloperEvent } from '../developers/events.js';
import type { AppRole } from '../developers/roles.js';
import type { AuditOf } from '../events/event.js';
import type { OnceClaim } from '../once.js';
import type { AppConfiguration, AppRecord } from './app.js';

/** What rotating a ClientSecret did besides. */
export interface SecretRotation {
  /** Admin tokens removed with the old secret (0 unless asked for). */
  adminTokensRevoked: number;
}

/** An app as it was when it was deleted, with who was a member of it. */
export interface DeletedApp {
  app: AppRecord;
  /** The owner first, then by when they were added. */
  members: { developerId: string; role: AppRole }[];
}

/** The first owner of an app, inserted with it (`AppStore.insertOwned`). */
export interface NewAppOwner {
  developerId: string;
  /**
   * How many apps the developer may own: nothing is written if it owns that many already. Counted
   * in the insertion's own transaction, insertions for one developer taking turns, so that several
   * at the same moment cannot pass it together. Null: no limit (the operator's CLI).
   */
  maxOwnedApps: number | null;
  /**
   * A form's once value (`src/once.ts`), claimed in the insertion's transaction when the limit lets
   * it through: `OnceClaimedError` (and nothing written) if it was claimed before.
   */
  once?: OnceClaim | undefined;
}

/** What `insertOwned` did: `ownedApps`, how many apps the developer owned before; `inserted` false when that was its limit. */
export interface OwnedAppInsertion {
  inserted: boolean;
  ownedApps: number;
}

/** An app that `insertMany` writes, and its owner's developer id (null: none, the operator's alone). */
export interface NewImportedApp {
  app: AppRecord;
  ownerId: string | null;
}

/** A stored app's keys, as an import compares them with a file's (`findByKeys`). */
export interface StoredAppKeys {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecretHash: Buffer;
}

/** An app with its owner's email (null: none), as `listWithOwners` reads them. */
export interface AppWithOwner {
  app: AppRecord;
  ownerEmail: string | null;
}

/** The apps' storage seam; one SQL implementation over both dialects (`src/store/sql/apps.ts`). */
export interface AppStore {
  /** Throws `StoreConflictError` if the AppID or ClientID is taken. */
  insert(app: AppRecord): Promise<void>;
  /**
   * Holds the app's row until the transaction ends (`Store.transaction`), so that the changes of
   * one app that lock it take turns: PostgreSQL's `FOR NO KEY UPDATE` (rows that merely refer to
   * the app, its tokens, are written meanwhile) or `FOR UPDATE` (they wait too); SQLite's write
   * transactions take turns anyway. True, or undefined if there is no such app.
   */
  lock(appId: string, mode: 'NO KEY UPDATE' | 'UPDATE'): Promise<true | undefined>;
  /**
   * Inserts the app with the developer as its owner, and the events `audit` builds, in one
   * transaction. Nothing is written when the developer is at its limit (`inserted` false), and
   * undefined (nothing written) if there is no such enabled developer. Throws `StoreConflictError`
   * as `insert`.
   */
  insertOwned(app: AppRecord, owner: NewAppOwner, audit: AuditOf<void>): Promise<OwnedAppInsertion | undefined>;
  /**
   * Inserts every app (an owned one with its owner's membership) and the events `audit` builds, in
   * one transaction, many rows a statement: all of it, or nothing. Throws `StoreConflictError` (and
   * writes nothing) if an AppID or ClientID is taken; false (nothing written) if an owner does not
   * exist or is disabled. No limit on how many apps an owner has (the operator's import).
   */
  insertMany(apps: readonly NewImportedApp[], audit: AuditOf<void>): Promise<boolean>;
  /** The keys of every stored app that has one of these AppIDs or one of these ClientIDs, each app once. */
  findByKeys(appIds: readonly string[], clientIds: readonly string[]): Promise<StoredAppKeys[]>;
  /** At once on SQLite; on PostgreSQL, the reads asked for in one turn of the event loop share one statement. */
  findById(appId: string): MaybePromise<AppRecord | undefined>;
  /** Oldest first. */
  list(): Promise<AppRecord[]>;
  /** Every app with its owner's email, oldest first. */
  listWithOwners(): Promise<AppWithOwner[]>;
  count(): Promise<number>;
  /**
   * Replaces the ClientSecret hash, with `revokeAdminTokens` removes every admin token of the app,
   * and writes the events `audit` builds of that, all in one transaction: if the events cannot be
   * written, nothing changes. The replaced hash becomes the previous secret until
   * `previousSecretValidUntil`; null ends it at once. Either way, a previous secret that an earlier
   * rotation kept is dropped (there is at most one). Undefined (and nothing written) if there is no
   * such app. With `once`, only by claiming it: `OnceClaimedError` (and nothing written) if it was
   * claimed before.
   */
  rotateClientSecret(
    appId: string,
    clientSecretHash: Buffer,
    options: { revokeAdminTokens: boolean; previousSecretValidUntil: number | null; once?: OnceClaim | undefined },
    audit: AuditOf<SecretRotation>,
  ): Promise<SecretRotation | undefined>;
  /**
   * Ends the ClientSecret the last rotation replaced, if it still works at `now` (its grace period
   * has not run out), and writes the events `audit` builds of the end it had, in one transaction:
   * that end (UNIX ms); null (nothing written) when no previous secret works; undefined when there
   * is no such app.
   */
  endPreviousSecret(appId: string, now: number, audit: AuditOf<number>): Promise<number | null | undefined>;
  /**
   * Sets the given configuration fields and leaves the others as they are (concurrent changes of
   * different fields both hold), and writes the events `audit` builds of the updated app, in one
   * transaction. The updated app, or undefined (and nothing written) if there is no such app.
   */
  updateConfiguration(appId: string, changes: Partial<AppConfiguration>, audit: AuditOf<AppRecord>): Promise<AppRecord | undefined>;
  /**
   * The configuration's changes computed from the app as it is, with its row held until they are
   * written, so that a change made meanwhile is not lost (adding an origin to the list). `change`
   * returns null for none (nothing written), or throws to write nothing. Undefined if there is no
   * such app.
   */
  changeConfiguration(
    appId: string,
    change: (current: AppConfiguration) => Partial<AppConfiguration> | null,
    audit: AuditOf<AppRecord>,
  ): Promise<{ app: AppRecord; changed: boolean } | undefined>;
  /**
   * Deletes the app and every token, event, membership and invitation of it, and writes the events
   * `audit` builds of what was deleted to its members' account logs (the app's own log goes with
   * it), in one transaction: if the events cannot be written, nothing is deleted. False (and
   * nothing written) if there is no such app.
   */
  delete(appId: string, audit: (deleted: DeletedApp) => NewDeveloperEvent[]): Promise<boolean>;
}
