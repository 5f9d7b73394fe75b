import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { EventLog } from './events/log.js';
import type { JwtKeyService } from './jwt/keys.js';
import { ALERT_MAX_AGE_MS, HOUR_MS } from './mail/alerts.js';
import type { Store } from './store/store.js';

export interface HousekeepingSettings {
  /** How often to run (HOUSEKEEPING_INTERVAL_SECONDS). */
  intervalMs: number;
  /** Events and counts older than this are removed (EVENTS_RETENTION_DAYS). */
  eventRetentionMs: number;
  /** Each app keeps at most this many audit events, the newest (EVENTS_MAX_PER_APP). */
  maxEventsPerApp: number;
  /** Each app keeps at most this many refusals, the newest (EVENTS_MAX_REFUSALS_PER_APP). */
  maxRefusalsPerApp: number;
  /** A new JWT key is rolled in (ahead) once the signing one is this old (JWT_KEY_ROTATION_DAYS); 0: only by `tessera keys rotate --jwt`. */
  jwtKeyRotationMs: number;
}

export const DEFAULT_HOUSEKEEPING: Readonly<HousekeepingSettings> = Object.freeze({
  intervalMs: 60_000,
  eventRetentionMs: 30 * 24 * 3600_000,
  maxEventsPerApp: 100_000,
  maxRefusalsPerApp: 10_000,
  jwtKeyRotationMs: 0,
});

/** Rows removed per statement: small enough that requests are served between them. */
const BATCH = 1000;

/**
 * How long the store remembers a writer of event counts that wrote nothing since
 * (`event_count_writers`, one row per process): a batch of counts whose commit is in doubt is added
 * once if it is written again within this time, which only an instance cut off from the database
 * (and no other) for longer would miss.
 */
export const COUNT_WRITERS_KEPT_MS = 24 * 3600_000;

/** How long a mail sent or given up stays in the outbox, for an operator who asks what became of it. */
export const FINISHED_MAIL_KEPT_MS = 24 * 3600_000;

export interface HousekeepingReport {
  expiredTokens: number;
  /** Single revocations of anonymous tokens that have expired since. */
  expiredRevocations: number;
  events: number;
  /** Rows of `event_counts` (one per app, minute and kind of event). */
  eventCounts: number;
  /** Writers of event counts (one per process) that wrote none for `COUNT_WRITERS_KEPT_MS`. */
  countWriters: number;
  /** Developers' portal sessions past their expiry. */
  expiredSessions: number;
  /** One-time links (password links, invitations) past their expiry, unused. */
  expiredLinks: number;
  /** Developers' account events past the events' retention. */
  developerEvents: number;
  /** Claims of the portal's once values past the forms' lifetime (`src/once-claims.ts`). */
  expiredOnceClaims: number;
  /** Proofs of work accepted, past their challenge's expiry (`src/attestation/`). */
  expiredAttestationClaims: number;
  /** Status list blocks and single revocations whose tokens have all expired (`src/jwt/status-lists.ts`). */
  expiredStatus: number;
  /** JWT keys whose private key was erased (a newer one signs) or that are published no more. */
  jwtKeys: number;
  /** Whether a JWT key was rolled in because the signing one reached `jwtKeyRotationMs`. */
  jwtKeyRotated: boolean;
  /** Alerts not mailed within `ALERT_MAX_AGE_MS` (none are without SMTP_URL), and the hourly notices of past hours. */
  staleAlerts: number;
  alertNotices: number;
  /** Mails sent or given up more than `FINISHED_MAIL_KEPT_MS` ago. */
  finishedMail: number;
}

/**
 * Removes what can no longer be used or is no longer kept: expired tokens, revocations of tokens
 * that have expired since, expired portal sessions, one-time links and once claims, audit events
 * (of apps and of developers' accounts) and counts beyond their retention, the writers of counts
 * gone quiet, alerts too old to mail (all of them without a mail server) and mail long sent. Each class of events is trimmed to its own cap, so refusals never push audit
 * events out. Works in small batches, yielding to requests between them, so that it never holds
 * the store (or, with SQLite, the event loop) for long.
 */
export class Housekeeping {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<HousekeepingReport> | undefined;

  constructor(
    private readonly store: Store,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly settings: HousekeepingSettings = DEFAULT_HOUSEKEEPING,
    private readonly onError: (error: unknown) => void = () => {},
    /** The JWT keys: tidied, and rolled on schedule (`jwtKeyRotationMs`). */
    private readonly jwtKeys?: JwtKeyService,
  ) {}

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.run().catch(this.onError);
    }, this.settings.intervalMs);
    this.#timer.unref();
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => {});
  }

  /** One pass; a call while one is running joins it. */
  run(): Promise<HousekeepingReport> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #pass(): Promise<HousekeepingReport> {
    const now = this.clock.now();
    const { eventRetentionMs, maxEventsPerApp, maxRefusalsPerApp } = this.settings;
    const expiredTokens = await drain((batch) => this.store.tokens.deleteExpired(now, batch));
    const expiredRevocations = await drain((batch) => this.store.revokedTokens.deleteExpired(now, batch));
    let events = await drain((batch) => this.store.events.deleteOlderThan(now - eventRetentionMs, batch));
    const eventCounts = await drain((batch) => this.store.events.deleteCountsOlderThan(now - eventRetentionMs, batch));
    const countWriters = await drain((batch) => this.store.events.deleteCountWritersOlderThan(now - COUNT_WRITERS_KEPT_MS, batch));
    for (const appId of this.events.takeAppsRecorded()) {
      events += await drain((batch) => this.store.events.trimApp(appId, 'audit', maxEventsPerApp, batch));
      events += await drain((batch) => this.store.events.trimApp(appId, 'refusal', maxRefusalsPerApp, batch));
    }
    const { developers } = this.store;
    const expiredSessions = await drain((batch) => developers.sessions.deleteExpired(now, batch));
    const expiredLinks = await drain((batch) => developers.links.deleteExpired(now, batch));
    const developerEvents = await drain((batch) => developers.accounts.deleteEventsOlderThan(now - eventRetentionMs, batch));
    const expiredOnceClaims = await drain((batch) => this.store.onceClaims.deleteExpired(now, batch));
    const expiredAttestationClaims =
      (await drain((batch) => this.store.attestation.deleteExpiredClaims(now, batch))) +
      (await drain((batch) => this.store.attestation.deleteExpiredSerials(now, batch)));
    const expiredStatus = await drain((batch) => this.store.statusLists.deleteExpiredStatus(now, batch));
    const jwtKeyRotated =
      this.settings.jwtKeyRotationMs > 0 && (await this.jwtKeys?.rotateIfOlderThan(this.settings.jwtKeyRotationMs)) === true;
    const jwtKeys = (await this.jwtKeys?.tidy()) ?? 0;
    const { mail } = this.store;
    const staleAlerts = await drain((batch) => mail.deleteAlertsBefore(now - ALERT_MAX_AGE_MS, batch));
    const alertNotices = await drain((batch) => mail.deleteNoticesBefore(Math.floor(now / HOUR_MS) - 1, batch));
    const finishedMail = await drain((batch) => mail.deleteFinishedBefore(now - FINISHED_MAIL_KEPT_MS, batch));
    return {
      expiredTokens,
      expiredRevocations,
      events,
      eventCounts,
      countWriters,
      expiredSessions,
      expiredLinks,
      developerEvents,
      expiredOnceClaims,
      expiredAttestationClaims,
      expiredStatus,
      jwtKeys,
      jwtKeyRotated,
      staleAlerts,
      alertNotices,
      finishedMail,
    };
  }
}

async function drain(step: (batch: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const removed = await step(BATCH);
    total += removed;
    if (removed < BATCH) return total;
    await nextTurn();
  }
}
