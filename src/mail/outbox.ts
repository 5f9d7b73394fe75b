import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { KeyEncryption } from '../jwt/key-encryption.js';
import type { MailKind, MailMessage } from './message.js';
import type { ClaimedMail, MailStore, OutboxBounds } from './store.js';

/**
 * How much mail may wait to be sent (docs/deployment.md, "Mail"): 5 for one address and kind (what a
 * flood of "Forgot your password?" or of invitations leaves waiting, past their own limits), 10 000 in
 * all. Mail past them is dropped, with a warning: the outbox never grows without bound while the
 * mail server is away.
 */
export const DEFAULT_OUTBOX_BOUNDS: Readonly<OutboxBounds> = Object.freeze({ perRecipientAndKind: 5, total: 10_000 });

/** The tables a request writes its mail to, in its change's transaction. */
export interface MailTables {
  readonly mail: MailStore;
}

/**
 * Mail waiting to be sent: each message sealed (AES-256-GCM under the key-encryption key, as the JWT
 * keys are: it may hold a one-time link, useless in a copy of the database), written in the
 * transaction of the change it tells of, and sent after the commit by `MailSender`. A request never
 * waits for the mail server.
 */
export class MailOutbox {
  constructor(
    private readonly encryption: KeyEncryption,
    private readonly clock: Clock,
    /** PUBLIC_URL, without a trailing slash: the base of every link mailed. */
    readonly publicUrl: string,
    private readonly bounds: OutboxBounds = DEFAULT_OUTBOX_BOUNDS,
    private readonly onDropped: (kind: MailKind) => void = () => {},
  ) {}

  #wake: () => void = () => {};

  /** What the sender is woken with once mail is committed. */
  onQueued(wake: () => void): void {
    this.#wake = wake;
  }

  /** The whole link of a portal page (`/portal/...`). */
  link(path: string): string {
    return `${this.publicUrl}${path}`;
  }

  /** Writes the mail in `tx`: true, or false when the outbox's bounds dropped it. Call `queued` after the commit. */
  async enqueue(tx: MailTables, kind: MailKind, message: MailMessage): Promise<boolean> {
    const sealed = this.encryption.encrypt(Buffer.from(JSON.stringify(message)), associatedData(kind, message.to));
    const written = await tx.mail.enqueue({ kind, recipient: message.to, message: sealed, createdAt: this.clock.now() }, this.bounds);
    if (written === undefined) this.onDropped(kind);
    return written !== undefined;
  }

  /** Mail was committed: the sender sends it now rather than at its next round. */
  queued(): void {
    this.#wake();
  }

  /** The message of a mail taken from the outbox; throws if it does not decrypt with this instance's key. */
  open(mail: ClaimedMail): MailMessage {
    return JSON.parse(this.encryption.decrypt(mail.message, associatedData(mail.kind, mail.recipient)).toString('utf8')) as MailMessage;
  }
}

/** A sealed message opens only as the mail it was written as (its row's kind and address). */
function associatedData(kind: MailKind, recipient: string): string {
  return `mail ${kind} ${recipient}`;
}
