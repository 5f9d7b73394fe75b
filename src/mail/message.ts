/** What a mail is for: the outbox's `kind`, and the metrics' label. */
export type MailKind = 'confirmation' | 'password_reset' | 'invitation' | 'alert';

export const MAIL_KINDS: readonly MailKind[] = ['confirmation', 'password_reset', 'invitation', 'alert'];

/** What the sender tells the metrics (`src/metrics/port.ts`): nothing by default. */
export interface MailMetrics {
  /** A mail the SMTP server accepted. */
  mailSent(kind: MailKind): void;
  /** An attempt to send a mail that failed (refused, timed out): tried again later, or given up after the last. */
  mailFailed(kind: MailKind): void;
}

/** A mail as it is sealed into the outbox: plain text, so that every client shows it and its links alike. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** The mail that confirms a new account's address (`PORTAL_SIGNUP=open`). */
export function confirmationMail(to: string, url: string, expiresAt: number): MailMessage {
  return {
    to,
    subject: 'Confirm your email address for Tessera',
    text: lines(
      `Someone, probably you, made an account of the Tessera developer portal with ${to}.`,
      '',
      'Confirm that this address is yours by opening this link:',
      '',
      url,
      '',
      `It works until ${utc(expiresAt)}. Until then, alerts about your apps are not mailed to you.`,
      'If you did not make this account, ignore this mail.',
    ),
  };
}

/** The mail of a forgotten password ("Forgot your password?" on the sign-in page). */
export function passwordResetMail(to: string, url: string, expiresAt: number): MailMessage {
  return {
    to,
    subject: 'Set a new password for Tessera',
    text: lines(
      `Someone, probably you, asked for a new password of the Tessera developer portal account ${to}.`,
      '',
      'Open this link to set one:',
      '',
      url,
      '',
      `It works once, until ${utc(expiresAt)}, and only the newest such link works.`,
      'If you did not ask for it, ignore this mail: your password stays as it is.',
    ),
  };
}

/** The mail of an invitation to collaborate on an app (the owner's people page, or the operator). */
export function invitationMail(to: string, appName: string, invitedBy: string | null, url: string, expiresAt: number): MailMessage {
  return {
    to,
    subject: `Invitation to the app ${appName} on Tessera`,
    text: lines(
      `${invitedBy ?? 'The operator of the Tessera service'} invites you to collaborate on the app ${appName}.`,
      '',
      `Open this link, and sign in (or sign up) as ${to}, to accept:`,
      '',
      url,
      '',
      `It works once, until ${utc(expiresAt)}.`,
    ),
  };
}

/** An alert about an app, with the page that shows what happened. */
export function alertMail(to: string, subject: string, what: string, url: string, appName: string, manageUrl: string): MailMessage {
  return {
    to,
    subject: `[${appName}] ${subject}`,
    text: lines(
      what,
      '',
      'See it in the developer portal:',
      '',
      url,
      '',
      'Alerts of this kind are mailed at most once an hour for each app.',
      `Turn them off for this app on its page: ${manageUrl}`,
    ),
  };
}

/** `2026-11-23 17:02 UTC`. */
export function utc(at: number): string {
  return `${new Date(at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function lines(...each: string[]): string {
  return `${each.join('\n')}\n`;
}
