import type { Clock } from 'tessera-tokens/internal/clock.js';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import type { AlertMailer } from './alerts.js';
import type { MailMetrics } from './message.js';
import type { MailOutbox } from './outbox.js';
import type { MailTransport } from './smtp.js';
import type { ClaimedMail, MailStore } from './store.js';

export interface MailSenderSettings {
  /** How often the outbox is looked at for mail due (mail written by this instance is sent at once). */
  pollIntervalMs: number;
  /**
   * The waits between attempts: a mail is tried `retryDelaysMs.length + 1` times, then given up
   * (`failed`). By default 1 minute, 5 minutes, 30 minutes, 2 hours, 6 hours: six attempts over
   * about 8 h 36 min, past most outages of a mail server.
   */
  retryDelaysMs: readonly number[];
  /** How long a mail taken is another instance's to leave alone: past any attempt's timeouts. */
  leaseMs: number;
  /** How long one attempt may take in all, whatever the transport's own timeouts. */
  attemptDeadlineMs: number;
}

export const DEFAULT_MAIL_SENDER: Readonly<MailSenderSettings> = Object.freeze({
  pollIntervalMs: 5_000,
  retryDelaysMs: Object.freeze([60_000, 300_000, 1_800_000, 7_200_000, 21_600_000]),
  leaseMs: 120_000,
  attemptDeadlineMs: 60_000,
});

/** Mails taken at a time. */
const BATCH = 20;
/** What is kept of an error in the outbox's `last_error`. */
const MAX_ERROR_LENGTH = 500;

/**
 * One loop per instance that sends what the outbox holds: it turns pending alerts into mail
 * (`AlertMailer`), then takes the mail due (a lease, so that two instances never send the same mail
 * at once), sends each through the transport and records the outcome: sent, tried again later
 * (`retryDelaysMs`), or given up. Nothing here is on a request's path, and every failure is caught:
 * a mail server that refuses or hangs costs attempts, never a request or the process.
 */
export class MailSender {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** A round failed, and the next one has not worked yet: said once. */
  #failing = false;

  constructor(
    private readonly mail: MailStore,
    private readonly outbox: MailOutbox,
    private readonly transport: MailTransport,
    private readonly alerts: AlertMailer,
    private readonly clock: Clock,
    private readonly metrics: MailMetrics,
    private readonly settings: MailSenderSettings = DEFAULT_MAIL_SENDER,
    private readonly onWarning: (message: string, error: unknown) => void = () => {},
  ) {
    outbox.onQueued(() => this.wake());
  }

  start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    this.#timer = setInterval(() => this.wake(), this.settings.pollIntervalMs);
    this.#timer.unref();
    this.wake();
  }

  /** Sends what is due now, once the round in progress (if any) is over. */
  wake(): void {
    if (this.#timer === undefined) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.#rounds().finally(() => {
      this.#running = undefined;
    });
  }

  /** One round: what is pending is mailed, as far as it is due. */
  async run(): Promise<void> {
    await this.#running;
    await this.#round();
  }

  /**
   * Stops the loop and closes the transport. The round in progress is not waited for (a hung mail
   * server or database would hold the shutdown): a mail taken and not marked is taken again when its
   * lease ends, by this instance started again or another.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.transport.close();
  }

  async #rounds(): Promise<void> {
    do {
      this.#again = false;
      try {
        await this.#round();
        this.#failing = false;
      } catch (error) {
        // The database away is said by the store's own signals; anything else once, until a round works again.
        if (!this.#failing && !this.#stopped && !isServiceUnavailable(error)) {
          this.onWarning('mail could not be sent this round; it is tried again at the next one', error);
        }
        this.#failing = true;
      }
    } while (this.#again && !this.#stopped);
  }

  async #round(): Promise<void> {
    await this.alerts.process();
    while (!this.#stopped) {
      const now = this.clock.now();
      const taken = await this.mail.claimDue(now, now + this.settings.leaseMs, BATCH);
      for (const mail of taken) await this.#send(mail);
      if (taken.length < BATCH) return;
    }
  }

  async #send(mail: ClaimedMail): Promise<void> {
    try {
      await withDeadline(this.transport.send(this.outbox.open(mail)), this.settings.attemptDeadlineMs);
    } catch (error) {
      this.metrics.mailFailed(mail.kind);
      const { retryDelaysMs } = this.settings;
      const delay = mail.attempts <= retryDelaysMs.length ? retryDelaysMs[mail.attempts - 1]! : undefined;
      const message = errorText(error);
      await this.mail.markAttemptFailed(mail.id, message, delay === undefined ? null : this.clock.now() + delay);
      this.onWarning(
        delay === undefined
          ? `a mail (${mail.kind}, outbox id ${mail.id}) was given up after ${mail.attempts} attempts: ${message}`
          : `a mail (${mail.kind}, outbox id ${mail.id}) could not be sent (attempt ${mail.attempts}); it is tried again in ${delay / 1000} s: ${message}`,
        undefined,
      );
      return;
    }
    this.metrics.mailSent(mail.kind);
    await this.mail.markSent(mail.id);
  }
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the mail server within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
