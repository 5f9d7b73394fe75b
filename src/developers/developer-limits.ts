import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { EventDetails } from '../events/event.js';
import { retryAfterSecondsOf, waitInWords, type CounterOptions, type RateLimits } from '../limits/rate-limits.js';
import { NO_METRICS, type Metrics } from '../metrics/port.js';
import type { RequestContext } from '../request-context.js';
import { developerStamp } from './stamp.js';
import type { DeveloperAccountStore } from './store.js';

/**
 * What one developer may add in the portal, so that what anyone with an account can do (anyone at
 * all, with PORTAL_SIGNUP=open) does not grow the store without bound. docs/portal.md, "Limits",
 * says why these numbers:
 * - apps it owns: 100 (PORTAL_APPS_PER_DEVELOPER), counted by the store in the insertion's own
 *   transaction;
 * - apps it creates: 20 an hour (creating and deleting apps in a loop stays bounded too);
 * - invitations it sends: 50 an hour, to all of its apps together (only an app's owner invites).
 * The operator's CLI is held by none of them.
 */
export interface DeveloperLimitSettings {
  ownedApps: number;
  appCreations: CounterOptions;
  invitations: CounterOptions;
}

export const DEFAULT_APPS_PER_DEVELOPER = 100;

export const DEFAULT_DEVELOPER_LIMITS: Readonly<DeveloperLimitSettings> = Object.freeze({
  ownedApps: DEFAULT_APPS_PER_DEVELOPER,
  appCreations: { points: 20, duration: 3600 },
  invitations: { points: 50, duration: 3600 },
});

/** Which limit refused, in a `developer.limit_reached` event (`limit`). */
export type DeveloperLimitName = 'owned_apps' | 'app_creations' | 'invitations';

/**
 * A developer's refusals by one limit are recorded at most once in this many seconds: a developer
 * who keeps trying must not grow the store (or push its sign-ins out of its account log) either.
 */
const REFUSALS_RECORDED_EVERY_SECONDS = 3600;

/**
 * The limits of `DeveloperLimitSettings`, counted where the token endpoint's are (in memory, or
 * shared in Redis); the rates count nothing when limits are off (`RATE_LIMITS=off`), the apps limit
 * holds always. Each refusal is a `developer.limit_reached` event of the developer's account log.
 */
export class DeveloperLimits {
  readonly #appCreations: RateLimiterAbstract | undefined;
  readonly #invitations: RateLimiterAbstract | undefined;
  readonly #refusalsRecorded: RateLimiterAbstract;

  constructor(
    limits: RateLimits,
    private readonly settings: DeveloperLimitSettings,
    private readonly accounts: DeveloperAccountStore,
    private readonly clock: Clock,
    /** Told when a refusal could not be recorded: the refusal is answered all the same. */
    private readonly onWarning: (message: string, error: unknown) => void = () => {},
    private readonly metrics: Metrics = NO_METRICS,
  ) {
    this.#appCreations = limits.counter('app-creations-by-developer', settings.appCreations);
    this.#invitations = limits.counter('invitations-by-developer', settings.invitations);
    const recorded = { points: 1, duration: REFUSALS_RECORDED_EVERY_SECONDS };
    this.#refusalsRecorded = limits.counter('limit-refusals-recorded', recorded) ?? new RateLimiterMemory(recorded);
  }

  /** How many apps a developer may own (the portal's; the operator gives any number). */
  get ownedApps(): number {
    return this.settings.ownedApps;
  }

  /**
   * Takes one of the developer's app creations, before the app is made: `TOO_MANY_REQUESTS` past
   * the limit. Taken, not checked: of requests at the same moment, only as many as the limit allows pass.
   */
  async takeAppCreation(developerId: string, context: RequestContext): Promise<void> {
    const { points, duration } = this.settings.appCreations;
    await this.#take(
      this.#appCreations,
      'app_creations',
      developerId,
      context,
      {},
      (wait) => `Too many new apps: a developer may create ${points} ${per(duration)}. Try again in ${wait}.`,
    );
  }

  /**
   * Gives back the app creation taken for an app the apps-owned limit refused: a developer at that
   * limit is told so every time, and once it deletes an app it may create one, whatever it tried meanwhile.
   */
  async giveBackAppCreation(developerId: string): Promise<void> {
    await this.#appCreations?.reward(developerId, 1);
  }

  /** Takes one of the developer's invitations, before the link is made: `TOO_MANY_REQUESTS` past the limit. */
  async takeInvitation(developerId: string, appId: string, context: RequestContext): Promise<void> {
    const { points, duration } = this.settings.invitations;
    await this.#take(
      this.#invitations,
      'invitations',
      developerId,
      context,
      { appId },
      (wait) =>
        `Too many invitations: a developer may send ${points} ${per(duration)}. Try again in ${wait}; the links handed out already still work.`,
    );
  }

  /**
   * The developer owns `ownedApps` apps, the most it may (`ownedApps` of the settings): records the
   * refusal and returns the error to answer, `APP_LIMIT_REACHED`.
   */
  async appLimitReached(developerId: string, ownedApps: number, context: RequestContext): Promise<TesseraError> {
    const allowed = this.settings.ownedApps;
    await this.#recordRefusal(developerId, 'owned_apps', { allowed, ownedApps }, context);
    return new TesseraError(
      'APP_LIMIT_REACHED',
      allowed === 0
        ? 'Apps are not created in the portal here: ask the operator of this service for one.'
        : `You own ${ownedApps} ${ownedApps === 1 ? 'app' : 'apps'}, and a developer may own ${allowed} at most here. ` +
            'Delete an app you no longer need (on its Settings page), or ask the operator of this service to raise the limit.',
    );
  }

  async #take(
    counter: RateLimiterAbstract | undefined,
    limit: 'app_creations' | 'invitations',
    developerId: string,
    context: RequestContext,
    details: EventDetails,
    message: (wait: string) => string,
  ): Promise<void> {
    if (counter === undefined) return;
    try {
      await counter.consume(developerId);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      this.metrics.rateLimited(limit);
      const retryAfterSeconds = retryAfterSecondsOf(rejection);
      const { points, duration } = this.settings[limit === 'app_creations' ? 'appCreations' : 'invitations'];
      await this.#recordRefusal(developerId, limit, { ...details, allowed: points, perSeconds: duration }, context);
      throw new TesseraError('TOO_MANY_REQUESTS', message(waitInWords(retryAfterSeconds)), { retryAfterSeconds });
    }
  }

  /** A `developer.limit_reached` event, unless one of this limit was recorded for the developer within the hour. */
  async #recordRefusal(developerId: string, limit: DeveloperLimitName, details: EventDetails, context: RequestContext): Promise<void> {
    try {
      await this.#refusalsRecorded.consume(`${limit}:${developerId}`);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return;
      this.onWarning('a refusal by a developer limit could not be counted', rejection);
      return;
    }
    const event = {
      ...developerStamp(developerId, this.clock.now(), context),
      type: 'developer.limit_reached' as const,
      details: { limit, ...details },
    };
    await this.accounts
      .appendEvents([event])
      .catch((error: unknown) => this.onWarning('a refusal by a developer limit could not be recorded', error));
  }
}

/** A window as a person says it: "an hour", "a minute", "every 10 minutes". */
function per(seconds: number): string {
  if (seconds === 3600) return 'an hour';
  if (seconds === 60) return 'a minute';
  if (seconds % 3600 === 0) return `every ${seconds / 3600} hours`;
  if (seconds % 60 === 0) return `every ${seconds / 60} minutes`;
  return `every ${seconds} seconds`;
}
