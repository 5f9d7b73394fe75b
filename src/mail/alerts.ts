import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import type { AppReads } from 'tessera-tokens/internal/apps/app-reads.js';
import { actingDeveloperId, type RequestContext } from '../request-context.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { alertMail, utc } from './message.js';
import type { MailOutbox, MailTables } from './outbox.js';
import type { MailStore, PendingAlert } from './store.js';

/**
 * An alert older than this is dropped, not mailed: a store copied with its pending alerts, or
 * instances all stopped for a while, must not mail news that is stale. Housekeeping drops those
 * left when no mail server is set (`SMTP_URL`), so that the table never grows.
 */
export const ALERT_MAX_AGE_MS = 3_600_000;

export const HOUR_MS = 3_600_000;

/** The alerts mailed to an app's members; each at most once per app and hour (of the event's time). */
export type AlertKind =
  'secret_exposed' | 'refusal_burst' | 'credential_refused' | 'secret_rotated' | 'credential_created' | 'credential_revoked';

interface AlertSpec {
  kind: AlertKind;
  /** A change someone made: not mailed to the developer who made it. */
  change: boolean;
  subject: string;
  what(alert: PendingAlert, appName: string): string;
  /** The portal page that shows it. */
  path(alert: PendingAlert): string;
}

const text = (value: unknown): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : '');
const credentialName = (alert: PendingAlert): string => {
  const name = text(alert.details.name);
  const clientId = text(alert.details.clientId);
  return name === '' ? clientId : `${name} (${clientId})`;
};
const eventPage = (alert: PendingAlert) => `/portal/apps/${alert.appId}/events/${alert.eventId}`;
const credentialsPage = (alert: PendingAlert) => `/portal/apps/${alert.appId}/credentials`;
const byWhom = (alert: PendingAlert): string =>
  alert.principal === 'operator' ? ' by the operator' : alert.principal === 'admin' ? ' with an admin token' : ' by another member';

const ALERTS: Readonly<Record<string, AlertSpec>> = {
  'app.secret_exposed': {
    kind: 'secret_exposed',
    change: false,
    subject: 'ClientSecret sent from a browser',
    what: (alert, app) =>
      `At ${utc(alert.eventAt)}, a web page (origin ${text(alert.details.origin) || 'unknown'}) sent a ClientSecret of the app ${app}: ` +
      'anyone who can read that page may have it. Rotate it, and keep it in server code only.',
    path: (alert) => `/portal/apps/${alert.appId}`,
  },
  'app.refusal_burst': {
    kind: 'refusal_burst',
    change: false,
    subject: 'Burst of refused requests',
    what: (alert, app) =>
      `In the minute from ${utc(Date.parse(text(alert.details.minute)) || alert.eventAt)}, ${text(alert.details.refused) || 'many'} token requests ` +
      `of the app ${app} were refused for their keys${alert.details.throttled === undefined ? '' : ` and ${text(alert.details.throttled)} throttled`}.`,
    path: (alert) => `/portal/apps/${alert.appId}/events?range=1h&type=token.refused`,
  },
  'credential.refused': {
    kind: 'credential_refused',
    change: false,
    subject: 'Credential refused',
    what: (alert, app) =>
      `At ${utc(alert.eventAt)}, the credential ${credentialName(alert)} of the app ${app} was refused with its right secret ` +
      `(${text(alert.details.reason) === 'credential_expired' ? 'it has expired' : 'for the address it came from'}).`,
    path: credentialsPage,
  },
  'app.secret_rotated': {
    kind: 'secret_rotated',
    change: true,
    subject: 'ClientSecret rotated',
    what: (alert, app) => `At ${utc(alert.eventAt)}, the ClientSecret of the app ${app} was rotated${byWhom(alert)}.`,
    path: eventPage,
  },
  'credential.created': {
    kind: 'credential_created',
    change: true,
    subject: 'Credential created',
    what: (alert, app) =>
      `At ${utc(alert.eventAt)}, the credential ${credentialName(alert)} of the app ${app} was created${byWhom(alert)}.`,
    path: eventPage,
  },
  'credential.revoked': {
    kind: 'credential_revoked',
    change: true,
    subject: 'Credential revoked',
    what: (alert, app) =>
      `At ${utc(alert.eventAt)}, the credential ${credentialName(alert)} of the app ${app} was revoked${byWhom(alert)}.`,
    path: credentialsPage,
  },
};

/** The tables the alerts are read and mailed with, in one transaction. */
export interface AlertTables extends MailTables {
  readonly apps: AppReads;
}

/** Pending alerts taken in one transaction. */
const BATCH = 50;

/**
 * Turns the events that call for an alert (`pending_alerts`, written with them by a trigger) into
 * mail to the app's members: the owner and collaborators whose address is confirmed, who did not
 * turn the app's alerts off, and, for a change, not the developer who made it. Each kind at most
 * once per app and hour, whichever instance sees it first (`alert_notices`); the alert is deleted
 * in the same transaction as its mail is written.
 */
export class AlertMailer {
  constructor(
    private readonly transactions: Transactional<AlertTables>,
    private readonly outbox: MailOutbox,
    private readonly clock: Clock,
  ) {}

  /** Mails what is pending; how many mails were written. */
  async process(): Promise<number> {
    let mailed = 0;
    for (;;) {
      const { taken, written } = await this.transactions.transaction(async (tx) => {
        const alerts = await tx.mail.claimAlerts(BATCH);
        let written = 0;
        for (const alert of alerts) written += await this.#mail(tx, alert);
        return { taken: alerts.length, written };
      });
      mailed += written;
      if (taken < BATCH) return mailed;
    }
  }

  async #mail(tx: AlertTables, alert: PendingAlert): Promise<number> {
    await tx.mail.deleteAlert(alert.id);
    const spec = ALERTS[alert.eventType];
    if (spec === undefined || alert.eventAt < this.clock.now() - ALERT_MAX_AGE_MS) return 0;
    const actor = spec.change && alert.principal === 'developer' ? text(alert.details.byDeveloperId) : '';
    const recipients = (await tx.mail.alertMembers(alert.appId)).filter(
      (member) => member.emailConfirmed && !member.disabled && !member.optedOut && member.developerId !== actor,
    );
    if (recipients.length === 0) return 0;
    const app = await tx.apps.findById(alert.appId);
    if (app === undefined) return 0;
    if ((await tx.mail.claimNotice(alert.appId, spec.kind, Math.floor(alert.eventAt / HOUR_MS))) === undefined) return 0;
    const url = this.outbox.link(spec.path(alert));
    const manage = this.outbox.link(`/portal/apps/${alert.appId}#alerts`);
    let written = 0;
    for (const member of recipients) {
      const message = alertMail(member.email, spec.subject, spec.what(alert, app.name), url, app.name, manage);
      if (await this.outbox.enqueue(tx, 'alert', message)) written++;
    }
    return written;
  }
}

/**
 * Whether a member gets an app's alerts by mail: each member turns them off or on for each app
 * (the app's page in the portal), for themselves only.
 */
export class AlertSettings {
  constructor(
    private readonly store: MailStore,
    /** Throws unless the developer is a member of the app (`AppAccess`, the `view_app` action). */
    private readonly authorizeMember: (appId: string, developerId: string, context: RequestContext) => Promise<unknown>,
  ) {}

  async enabled(appId: string, context: RequestContext): Promise<boolean> {
    const developerId = await this.#member(appId, context);
    return !(await this.store.isOptedOut(appId, developerId));
  }

  async set(appId: string, enabled: boolean, context: RequestContext): Promise<void> {
    const developerId = await this.#member(appId, context);
    await this.store.setOptOut(appId, developerId, !enabled);
  }

  async #member(appId: string, context: RequestContext): Promise<string> {
    const developerId = actingDeveloperId(context);
    if (developerId === undefined) throw new TesseraError('FORBIDDEN', 'Only a member of the app may turn its alerts off or on.');
    await this.authorizeMember(appId, developerId, context);
    return developerId;
  }
}
