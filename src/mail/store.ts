import type { Actor } from '../request-context.js';
import type { MailKind } from './message.js';

/** A mail to send, its message sealed (`MailOutbox`): what a request writes, in its change's transaction. */
export interface NewMail {
  kind: MailKind;
  /** The address it goes to (also inside the sealed message): what the bound per address counts. */
  recipient: string;
  message: Buffer;
  /** UNIX ms. */
  createdAt: number;
}

/** How much mail may wait to be sent: per address and kind, and in all. */
export interface OutboxBounds {
  perRecipientAndKind: number;
  total: number;
}

/** A mail taken to be sent (its lease taken: `attempts` counts this attempt). */
export interface ClaimedMail {
  id: number;
  kind: MailKind;
  recipient: string;
  message: Buffer;
  attempts: number;
}

/** An event that may call for an alert (`pending_alerts`, written with the event by a trigger). */
export interface PendingAlert {
  id: number;
  appId: string;
  eventId: number;
  eventType: string;
  /** UNIX ms. */
  eventAt: number;
  principal: Actor | null;
  details: Record<string, unknown>;
}

/** A member of an app as alerts see it. */
export interface AlertMember {
  developerId: string;
  email: string;
  emailConfirmed: boolean;
  disabled: boolean;
  optedOut: boolean;
}

/**
 * The storage seam of mail (`src/mail/`): the outbox, the alerts waiting to be mailed, the hourly
 * notices that keep an alert to one mail an hour, the members' opt-outs, and the confirmation of a
 * developer's address. One SQL implementation over both dialects (`src/store/sql/mail.ts`).
 */
export interface MailStore {
  /**
   * Writes the mail unless `bounds` are reached (mail waiting for the same address and kind, or in
   * all): true if written, undefined (nothing written) otherwise.
   */
  enqueue(mail: NewMail, bounds: OutboxBounds): Promise<true | undefined>;
  /**
   * Takes up to `batch` mails due at `now`: each is given until `leaseUntil` (another instance takes
   * it again only then, if this one died sending it) and its attempt counted. PostgreSQL skips the
   * rows another instance is taking at the same moment.
   */
  claimDue(now: number, leaseUntil: number, batch: number): Promise<ClaimedMail[]>;
  markSent(id: number): Promise<void>;
  /** A failed attempt: tried again at `nextAttemptAt`, or given up (`failed`) when it is null. */
  markAttemptFailed(id: number, error: string, nextAttemptAt: number | null): Promise<void>;
  /** Mail waiting to be sent (for tests and the operator). */
  countPending(): Promise<number>;
  /** Deletes up to `batch` mails sent or given up, written before `cutoff`; returns how many. */
  deleteFinishedBefore(cutoff: number, batch: number): Promise<number>;

  /** Takes up to `batch` pending alerts, oldest first; PostgreSQL skips those another instance holds. */
  claimAlerts(batch: number): Promise<PendingAlert[]>;
  deleteAlert(id: number): Promise<void>;
  /** Deletes up to `batch` pending alerts of events before `cutoff`; returns how many. */
  deleteAlertsBefore(cutoff: number, batch: number): Promise<number>;
  /** Claims the app's notice of `kind` for `hour`: true if no instance sent it yet, undefined otherwise. */
  claimNotice(appId: string, kind: string, hour: number): Promise<true | undefined>;
  /** Deletes up to `batch` notices of hours before `hour`; returns how many. */
  deleteNoticesBefore(hour: number, batch: number): Promise<number>;
  /** The app's members with what alerts need of them. */
  alertMembers(appId: string): Promise<AlertMember[]>;
  /** Turns the app's alerts off (`optedOut`) or on for the developer. */
  setOptOut(appId: string, developerId: string, optedOut: boolean): Promise<void>;
  isOptedOut(appId: string, developerId: string): Promise<boolean>;

  /** Confirms the developer's address at `at`, if it is still `email` and not confirmed yet: true, or undefined. */
  confirmEmail(developerId: string, email: string, at: number): Promise<true | undefined>;
}
