import type { Clock } from 'tessera-tokens/internal/clock.js';
import { developerNotFound, invalidCredentials, invalidLink } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { requireOperator, type RequestContext } from '../request-context.js';
import { describeDeveloper, newDeveloperId, type DeveloperDescription, type DeveloperRecord } from './developer.js';
import { checkedEmail, normaliseEmail } from './email.js';
import type { NewDeveloperEvent } from './events.js';
import { issuedLink, LINK_LIFETIME_MS, type IssuedLink, type LinkPurpose, type OneTimeLinkRecord } from './one-time-link.js';
import { hashPassword } from './password-hash.js';
import { checkedNewPassword } from './password-rules.js';
import { generateSecretToken, parseSecretToken, secretMatches } from './secret-token.js';
import { checkCredentials } from './sign-in.js';
import type { SignInLimits } from './sign-in-limits.js';
import { developerStamp } from './stamp.js';
import type { DeveloperStore } from './store.js';
import { StoreConflictError, type Transactional } from 'tessera-tokens/internal/transaction.js';
import { writeAccountAudit, type AccountTables } from './account-audit.js';
import { CONFIRMATION_LIFETIME_MS, type EmailConfirmations } from '../mail/confirmation.js';
import type { MailRequestLimits } from '../limits/mail-requests.js';
import { confirmationMail, passwordResetMail } from '../mail/message.js';
import type { MailOutbox, MailTables } from '../mail/outbox.js';

export interface CreatedDeveloper {
  developer: DeveloperDescription;
  /** Without a password: the one-time link that sets it (its token shown only here). */
  link: IssuedLink | null;
}

export interface DisabledDeveloper {
  developer: DeveloperDescription;
  /** False if it was disabled already (nothing changed). */
  changed: boolean;
  sessionsEnded: number;
}

export interface DeveloperAccountsOptions {
  /** The portal's public URL (`PUBLIC_URL`), for whole links; without it, links are paths. */
  publicUrl?: string | undefined;
  /** With a mail server (`SMTP_URL`): the mail of accounts (confirmations, forgotten passwords). */
  mail?: AccountMail | undefined;
}

/** What accounts mail with. */
export interface AccountMail {
  outbox: MailOutbox;
  confirmations: EmailConfirmations;
  limits: MailRequestLimits;
  /** Told of a link that could not be queued after its request was answered. */
  onWarning: (message: string, error: unknown) => void;
}

/** A confirmation of an address, as its link's page shows it. */
export interface EmailConfirmation {
  developerId: string;
  email: string;
  /** Whether it was confirmed already. */
  confirmed: boolean;
}

/**
 * Developer accounts: what the operator does with them (`tessera developers …`) and what a developer
 * does with their own (set a password through a link, change it). Sessions are `DeveloperSessions`'.
 */
export class DeveloperAccounts {
  constructor(
    private readonly store: DeveloperStore,
    private readonly transactions: Transactional<AccountTables & MailTables>,
    private readonly clock: Clock,
    private readonly limits: SignInLimits,
    private readonly options: DeveloperAccountsOptions = {},
  ) {}

  /**
   * A new developer, made by the operator. With a password, it can sign in at once; without, it
   * gets a one-time link that sets one (the operator passes it on).
   */
  async create(email: string, password: string | null, context: RequestContext): Promise<CreatedDeveloper> {
    requireOperator(context);
    return this.#create(email, password, context, 'operator');
  }

  /** An account the operator makes is confirmed (the operator vouches for its address); one signed up for is not, until its link is followed. */
  async #create(email: string, password: string | null, context: RequestContext, by: 'operator' | 'sign-up'): Promise<CreatedDeveloper> {
    const normalisedEmail = checkedEmail(email);
    const passwordHash = password === null ? null : await hashPassword(checkedNewPassword(password));
    const now = this.clock.now();
    const developer: DeveloperRecord = {
      id: newDeveloperId(),
      email: normalisedEmail,
      passwordHash,
      createdAt: now,
      disabledAt: null,
      emailConfirmedAt: by === 'operator' ? now : null,
    };
    const { mail } = this.options;
    const link = passwordHash === null ? this.#newPasswordLink('set_password', developer.id, now) : null;
    const stamp = developerStamp(developer.id, now, context);
    const events: NewDeveloperEvent[] = [{ ...stamp, type: 'developer.created', details: { hasPassword: passwordHash !== null } }];
    if (link !== null) events.push({ ...stamp, type: 'developer.link_issued', details: linkDetails(link.record) });
    try {
      await this.transactions.transaction(async (tx) => {
        await tx.developers.accounts.insert(developer);
        if (link !== null) await tx.developers.links.insert(link.record);
        await writeAccountAudit(tx, { developer: events });
        if (mail !== undefined && by === 'sign-up') await this.#enqueueConfirmation(tx, mail, developer, now);
      });
    } catch (error) {
      if (error instanceof StoreConflictError) throw new TesseraError('CONFLICT', 'A developer with this email address exists.');
      throw error;
    }
    mail?.outbox.queued();
    return { developer: describeDeveloper(developer), link: link === null ? null : this.#issued(link.record, link.token) };
  }

  /**
   * A developer who signs up on the portal (`PORTAL_SIGNUP=open`), with a password. Every attempt,
   * whatever its outcome, counts against its client address's sign-in limit (100 an hour), before
   * any password is hashed: that bounds both the accounts one address can make and the addresses
   * it can try (a taken one is `CONFLICT`; docs/portal.md, "Sign-up", says why it is told).
   */
  async signUp(email: string, password: string, context: RequestContext): Promise<CreatedDeveloper> {
    const attempt = { email: undefined, clientAddress: context.clientAddress, trustedDevice: null };
    await this.limits.admit(attempt); // and never given back: every attempt counts
    return this.#create(email, password, context, 'sign-up');
  }

  /**
   * "Forgot your password?": mails a reset link to the address if an enabled account has it, and
   * does nothing otherwise, once the caller has answered, the same either way. Counted against the
   * mail request limits (per address, per client address) whether or not the account exists.
   */
  async mailPasswordReset(email: string, context: RequestContext): Promise<void> {
    const mail = this.#mail();
    const normalised = checkedEmail(email);
    await mail.limits.take(normalised, context.clientAddress);
    // After the answer: whether the address has an account shows neither in the answer nor in its time.
    setImmediate(() => {
      this.#mailPasswordReset(mail, normalised, context).catch((error: unknown) =>
        mail.onWarning('a password reset link asked for on the sign-in page could not be queued; the developer may ask again', error),
      );
    });
  }

  async #mailPasswordReset(mail: AccountMail, normalised: string, context: RequestContext): Promise<void> {
    const developer = await this.store.accounts.findByEmail(normalised);
    if (developer === undefined || developer.disabledAt !== null) return;
    const now = this.clock.now();
    const link = this.#newPasswordLink('reset_password', developer.id, now);
    const issued = this.#issued(link.record, link.token);
    const stamp = developerStamp(developer.id, now, context);
    await this.transactions.transaction(async (tx) => {
      if ((await tx.developers.links.insert(link.record)) === undefined) return;
      await writeAccountAudit(tx, {
        developer: [{ ...stamp, type: 'developer.link_issued', details: { ...linkDetails(link.record), mailed: true } }],
      });
      await mail.outbox.enqueue(
        tx,
        'password_reset',
        passwordResetMail(developer.email, mail.outbox.link(issued.path), link.record.expiresAt),
      );
    });
    mail.outbox.queued();
  }

  /** Mails the developer's confirmation link again (the portal's banner), within the mail request limits. */
  async mailConfirmation(developerId: string, context: RequestContext): Promise<void> {
    const mail = this.#mail();
    const developer = await this.store.accounts.findById(developerId);
    if (developer === undefined || developer.disabledAt !== null || developer.emailConfirmedAt !== null) return;
    await mail.limits.take(developer.email, context.clientAddress);
    await this.transactions.transaction((tx) => this.#enqueueConfirmation(tx, mail, developer, this.clock.now()));
    mail.outbox.queued();
  }

  /** What a confirmation link is for, if it works now; `INVALID_LINK` otherwise (also for an address the account no longer has). */
  async emailConfirmation(token: string): Promise<EmailConfirmation> {
    const claim = this.#mail().confirmations.read(token);
    if (claim === undefined || claim.expiresAt <= this.clock.now()) throw invalidLink();
    const developer = await this.store.accounts.findById(claim.developerId);
    if (developer === undefined || developer.disabledAt !== null || developer.email !== claim.email) throw invalidLink();
    return { developerId: developer.id, email: developer.email, confirmed: developer.emailConfirmedAt !== null };
  }

  /** Confirms the address of a confirmation link; following it again changes nothing. */
  async confirmEmail(token: string): Promise<EmailConfirmation> {
    const confirmation = await this.emailConfirmation(token);
    if (!confirmation.confirmed) {
      await this.transactions.transaction((tx) => tx.mail.confirmEmail(confirmation.developerId, confirmation.email, this.clock.now()));
    }
    return { ...confirmation, confirmed: true };
  }

  /** Whether accounts are mailed (`SMTP_URL`). */
  get mails(): boolean {
    return this.options.mail !== undefined;
  }

  #mail(): AccountMail {
    const { mail } = this.options;
    if (mail === undefined) throw new TesseraError('NOT_FOUND', 'This service sends no mail (no SMTP_URL).');
    return mail;
  }

  async #enqueueConfirmation(tx: MailTables, mail: AccountMail, developer: DeveloperRecord, now: number): Promise<void> {
    const expiresAt = now + CONFIRMATION_LIFETIME_MS;
    const token = mail.confirmations.token({ developerId: developer.id, email: developer.email, expiresAt });
    const url = mail.outbox.link(`/portal/confirm-email?token=${token}`);
    await mail.outbox.enqueue(tx, 'confirmation', confirmationMail(developer.email, url, expiresAt));
  }

  async list(): Promise<DeveloperDescription[]> {
    return (await this.store.accounts.list()).map(describeDeveloper);
  }

  /** The developer with this email; `DEVELOPER_NOT_FOUND` if none (also for what is not an address). */
  async find(email: string): Promise<DeveloperRecord> {
    const normalised = normaliseEmail(email);
    const developer = normalised === undefined ? undefined : await this.store.accounts.findByEmail(normalised);
    if (developer === undefined) throw developerNotFound();
    return developer;
  }

  /** The operator disables the developer: no sign-in, every session ended, every password link removed. Memberships stay. */
  async disable(email: string, context: RequestContext): Promise<DisabledDeveloper> {
    requireOperator(context);
    const developer = await this.find(email);
    if (developer.disabledAt !== null) return { developer: describeDeveloper(developer), changed: false, sessionsEnded: 0 };
    const at = this.clock.now();
    const stamp = developerStamp(developer.id, at, context);
    const disabled = await this.transactions.transaction(async (tx) => {
      const result = await tx.developers.accounts.disable(developer.id, at);
      if (result !== undefined) {
        await writeAccountAudit(tx, {
          developer: [{ ...stamp, type: 'developer.disabled', details: { sessionsEnded: result.sessionsEnded } }],
        });
      }
      return result;
    });
    if (disabled === undefined) return this.disable(email, context); // disabled or deleted meanwhile: say what is now
    return { developer: describeDeveloper({ ...developer, disabledAt: at }), changed: true, sessionsEnded: disabled.sessionsEnded };
  }

  /** A one-time link that sets a new password, for the operator to pass on; it replaces the developer's earlier password links. */
  async issueResetLink(email: string, context: RequestContext): Promise<IssuedLink & { email: string }> {
    requireOperator(context);
    const developer = await this.find(email);
    if (developer.disabledAt !== null)
      throw new TesseraError('invalid_request', 'This developer is disabled: a reset link would not work.');
    const now = this.clock.now();
    const link = this.#newPasswordLink('reset_password', developer.id, now);
    const stamp = developerStamp(developer.id, now, context);
    await this.transactions.transaction(async (tx) => {
      if ((await tx.developers.links.insert(link.record)) === undefined) throw developerNotFound();
      await writeAccountAudit(tx, { developer: [{ ...stamp, type: 'developer.link_issued', details: linkDetails(link.record) }] });
    });
    return { email: developer.email, ...this.#issued(link.record, link.token) };
  }

  /**
   * The developer a password link is for, if it works now (for the portal's page to show its form);
   * `INVALID_LINK` otherwise. Does not use it up.
   */
  async passwordLinkOwner(token: string): Promise<DeveloperRecord> {
    const link = await this.#workingLink(token, ['set_password', 'reset_password']);
    const developer = await this.store.accounts.findById(link.developerId!);
    if (developer === undefined || developer.disabledAt !== null) throw invalidLink();
    return developer;
  }

  /**
   * Sets the password through a set-password or reset link, which is used up; every session of the
   * developer ends. Returns the developer, for the portal to start a session.
   */
  async setPasswordWithLink(token: string, password: string, context: RequestContext): Promise<DeveloperRecord> {
    const link = await this.#workingLink(token, ['set_password', 'reset_password']);
    const passwordHash = await hashPassword(checkedNewPassword(password));
    const developerId = link.developerId!;
    const stamp = developerStamp(developerId, this.clock.now(), context);
    await this.transactions.transaction(async (tx) => {
      // Only by using up the link: gone (used, replaced, expired and removed), nothing changes.
      if ((await tx.developers.links.usePasswordLink(link.id, developerId)) === undefined) throw invalidLink();
      const set = await tx.developers.accounts.setPassword(developerId, passwordHash);
      if (set === undefined) throw invalidLink();
      await writeAccountAudit(tx, {
        developer: [
          { ...stamp, type: 'developer.password_set', details: { via: link.purpose, linkId: link.id, sessionsEnded: set.sessionsEnded } },
        ],
      });
    });
    const developer = await this.store.accounts.findById(developerId);
    if (developer === undefined) throw invalidLink();
    return developer;
  }

  /**
   * Changes a signed-in developer's password after checking the current one (under the sign-in
   * limits, as a sign-in, from the browser's device token if it has one). Every session of the
   * developer ends, this one too: the portal starts a new one.
   */
  async changePassword(
    developerId: string,
    currentPassword: string,
    newPassword: string,
    context: RequestContext,
    deviceToken?: string,
  ): Promise<DeveloperRecord> {
    const developer = await this.store.accounts.findById(developerId);
    if (developer === undefined || developer.disabledAt !== null) throw invalidCredentials();
    const normalised = checkedNewPassword(newPassword);
    await checkCredentials(this.store.accounts, this.limits, {
      email: developer.email,
      password: currentPassword,
      clientAddress: context.clientAddress,
      deviceToken,
    });
    const passwordHash = await hashPassword(normalised);
    const stamp = developerStamp(developerId, this.clock.now(), context);
    await this.transactions.transaction(async (tx) => {
      const set = await tx.developers.accounts.setPassword(developerId, passwordHash);
      if (set === undefined) throw invalidCredentials();
      await writeAccountAudit(tx, {
        developer: [{ ...stamp, type: 'developer.password_set', details: { via: 'change', sessionsEnded: set.sessionsEnded } }],
      });
    });
    return { ...developer, passwordHash };
  }

  /**
   * Deletes the developer with its sessions, links, memberships and account events; the apps it
   * owned are the operator's again (their audit logs keep what it did, by its id).
   */
  async delete(email: string): Promise<DeveloperDescription> {
    const developer = await this.find(email);
    if ((await this.store.accounts.delete(developer.id)) === undefined) throw developerNotFound();
    return describeDeveloper(developer);
  }

  async #workingLink(token: string, purposes: LinkPurpose[]): Promise<OneTimeLinkRecord> {
    const presented = parseSecretToken(token);
    if (presented === undefined) throw invalidLink();
    const link = await this.store.links.findById(presented.id);
    if (link === undefined || !secretMatches(presented, link.secretHash)) throw invalidLink();
    if (!purposes.includes(link.purpose) || link.expiresAt <= this.clock.now()) throw invalidLink();
    return link;
  }

  #newPasswordLink(
    purpose: 'set_password' | 'reset_password',
    developerId: string,
    now: number,
  ): { record: OneTimeLinkRecord; token: string } {
    const secret = generateSecretToken();
    return {
      token: secret.token,
      record: {
        id: secret.id,
        secretHash: secret.secretHash,
        purpose,
        developerId,
        appId: null,
        email: null,
        invitedBy: null,
        createdAt: now,
        expiresAt: now + LINK_LIFETIME_MS[purpose],
      },
    };
  }

  #issued(link: OneTimeLinkRecord, token: string): IssuedLink {
    return issuedLink(link.purpose, link.id, token, link.expiresAt, this.options.publicUrl);
  }
}

/** What an event says of a link: never its token. */
export function linkDetails(link: OneTimeLinkRecord) {
  return { purpose: link.purpose, linkId: link.id, expiresAt: link.expiresAt };
}
