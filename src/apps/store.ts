import type { AppReads } from 'tessera-tokens/internal/apps/app-reads.js';
import type { AppRole } from '../developers/roles.js';
import type { EndedPreviousSecret } from '../credentials/store.js';
import type { AppConfiguration, AppRecord } from 'tessera-tokens/internal/apps/app.js';

/** An app as it was when it was deleted, with who was a member of it. */
export interface DeletedApp {
  app: AppRecord;
  /** The owner first, then by when they were added. */
  members: { developerId: string; role: AppRole }[];
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

/**
 * The apps' storage seam; one SQL implementation over both dialects (`src/store/sql/apps.ts`). Its
 * methods take and give plain records, undefined when nothing was written (or found); a change is
 * put together with its rules (a limit, a once value) and its audit events by the service, in one
 * transaction (`Store.transaction`). A method that writes several statements runs them in the
 * transaction it is called in, or in one of its own.
 */
export interface AppStore extends AppReads {
  /** Throws `StoreConflictError` if the AppID or ClientID is taken. */
  insert(app: AppRecord): Promise<void>;
  /**
   * Holds the app's row until the transaction ends (`Store.transaction`), so that the changes of
   * one app that lock it take turns: PostgreSQL's `FOR NO KEY UPDATE` (rows that merely refer to
   * the app, its tokens, are written meanwhile) or `FOR UPDATE` (they wait too); SQLite's write
   * transactions take turns anyway. True, or undefined if there is no such app.
   */
  lock(appId: string, mode: 'NO KEY UPDATE' | 'UPDATE'): Promise<true | undefined>;
  /** The app, its row held as `lock` holds it, so that what is computed from it is written before anyone changes it. */
  findLocked(appId: string, mode: 'NO KEY UPDATE' | 'UPDATE'): Promise<AppRecord | undefined>;
  /**
   * Inserts every app (an owned one with its owner's membership), many rows a statement: all of
   * it, or nothing. Throws `StoreConflictError` (and writes nothing) if an AppID or ClientID is
   * taken; undefined (nothing written) if an owner does not exist or is disabled, the owners being
   * held against a disabling until the transaction ends.
   */
  insertMany(apps: readonly NewImportedApp[]): Promise<true | undefined>;
  /** The keys of every stored app that has one of these AppIDs or one of these ClientIDs, each app once. */
  findByKeys(appIds: readonly string[], clientIds: readonly string[]): Promise<StoredAppKeys[]>;
  /** Oldest first. */
  list(): Promise<AppRecord[]>;
  /** Every app with its owner's email, oldest first. */
  listWithOwners(): Promise<AppWithOwner[]>;
  count(): Promise<number>;
  /**
   * Takes admin authority away (`withdrawAdminGrants`: tokens authenticated against the app as it
   * was are not stored), then replaces the ClientSecret hash. The replaced hash becomes the previous
   * secret until `previousSecretValidUntil`; null ends it at once. Either way, a previous secret
   * that an earlier rotation kept is dropped (there is at most one). True, or undefined (nothing
   * written) if there is no such app.
   */
  rotateClientSecret(appId: string, clientSecretHash: Buffer, previousSecretValidUntil: number | null): Promise<true | undefined>;
  /**
   * Ends the ClientSecret the last rotation replaced, if it still works at `now` (its grace period
   * has not run out): the end it had, or `validUntil` null (nothing written) when no previous
   * secret works; undefined when there is no such app.
   */
  endPreviousSecret(appId: string, now: number): Promise<EndedPreviousSecret | undefined>;
  /**
   * Sets the given configuration fields and leaves the others as they are (concurrent changes of
   * different fields both hold). The updated app, or undefined (and nothing written) if there is no such app.
   */
  updateConfiguration(appId: string, changes: Partial<AppConfiguration>): Promise<AppRecord | undefined>;
  /** As `updateConfiguration`, without reading the app again: true, or undefined (nothing written) if there is no such app. */
  patchConfiguration(appId: string, changes: Partial<AppConfiguration>): Promise<true | undefined>;
  /**
   * Deletes the app and every token, event, count, membership and invitation of it, its row locked
   * first (`FOR UPDATE`); returns it as it was, with its members, or undefined (nothing written)
   * if there is no such app.
   */
  delete(appId: string): Promise<DeletedApp | undefined>;
}
