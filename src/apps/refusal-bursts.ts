import type { Clock } from 'tessera-tokens/internal/clock.js';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import { eventCountQuery } from '../events/counts.js';
import type { EventDetails, EventType, NewAuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import { claimOnce, type OnceClaimStore } from '../once-claims.js';
import { isKeyRefusal, refusalBurstOf } from './attention.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/**
 * How long after a minute ends its counts are read: every instance writes its counts within a
 * fraction of a second (`EVENT_FLUSH_DELAY_MS`), or keeps them while the database is away.
 */
const SETTLE_MS = 5_000;

/** Apps an instance checks for a minute at most: an attack across every app is bounded to this many reads a minute. */
export const MAX_APPS_CHECKED_PER_MINUTE = 1_000;

interface BurstTables {
  readonly onceClaims: OnceClaimStore;
  readonly events: { append(batch: readonly NewAuditEvent[]): Promise<void> };
}

/**
 * Records `app.refusal_burst` when token requests refused for their keys reach a burst in a minute
 * (`REFUSAL_BURST_PER_MINUTE`, the list of apps' flag): what webhooks and alert mails are told of.
 * Each instance notes the apps it refused requests of in each minute, and once the minute has ended
 * reads their counts, which hold every instance's refusals: a burst spread over several instances is
 * found too. At most one event per app and hour, whichever instances find it (a once claim in the
 * event's transaction).
 */
export class RefusalBurstWatch {
  /** The apps noted, by the start of their minute. */
  readonly #noted = new Map<number, Set<string>>();
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  constructor(
    private readonly log: EventLog,
    private readonly store: Transactional<BurstTables>,
    private readonly clock: Clock,
    private readonly onWarning: (message: string, error: unknown) => void = () => {},
  ) {}

  /** Notes an app whose token request was refused for its keys (the event log's listener). */
  note(type: EventType, appId: string, at: number, details: EventDetails): void {
    const reason = typeof details.reason === 'string' ? details.reason : null;
    if (!isKeyRefusal({ type, reason })) return;
    this.#noteMinute(at - (at % MINUTE_MS), appId);
  }

  #noteMinute(minute: number, appId: string): void {
    let apps = this.#noted.get(minute);
    if (apps === undefined) {
      apps = new Set();
      this.#noted.set(minute, apps);
    }
    if (apps.size < MAX_APPS_CHECKED_PER_MINUTE) apps.add(appId);
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.checkEnded(), SETTLE_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#checking;
  }

  /** Checks the apps of every minute that ended `SETTLE_MS` ago or more. Never throws. */
  checkEnded(): Promise<void> {
    this.#checking ??= this.#checkEnded().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  async #checkEnded(): Promise<void> {
    const now = this.clock.now();
    for (const [minute, apps] of [...this.#noted]) {
      if (minute + MINUTE_MS + SETTLE_MS > now) continue;
      this.#noted.delete(minute);
      for (const appId of apps) {
        try {
          await this.#check(appId, minute, now);
        } catch (error) {
          if (!isServiceUnavailable(error)) {
            this.onWarning(`whether app ${appId} had a burst of refused requests could not be checked`, error);
          } else if (now - minute < HOUR_MS) {
            // The database away (said by the store's own signals): checked again at the next turn, within the hour.
            this.#noteMinute(minute, appId);
          }
        }
      }
    }
  }

  async #check(appId: string, minute: number, now: number): Promise<void> {
    const counts = await this.log.counts(appId, eventCountQuery({ per: 'minute', since: minute, until: minute + MINUTE_MS }, now));
    const burst = refusalBurstOf(counts);
    if (burst === null) return;
    const hour = minute - (minute % HOUR_MS);
    const event: NewAuditEvent = {
      type: 'app.refusal_burst',
      appId,
      at: now,
      principal: null,
      clientAddress: null,
      details: { minute: burst.minute, refused: burst.refused, throttled: burst.throttled },
    };
    await this.log.flush();
    await this.store
      .transaction(async (tx) => {
        await claimOnce(tx.onceClaims, { value: `refusal-burst ${appId} ${hour}`, keepUntil: hour + 2 * HOUR_MS });
        await tx.events.append([event]);
      })
      .catch((error: unknown) => {
        // Claimed already: this hour's burst is recorded.
        if (!(error instanceof Error && 'code' in error && error.code === 'CONFLICT')) throw error;
      });
  }
}
