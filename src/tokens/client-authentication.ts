import type { AppRecord } from '../apps/app.js';
import { ownKey } from '../cache/own-key.js';
import type { Clock } from '../clock.js';
import { clientSecretDigest, credentialsEqual, digestsEqual } from '../crypto.js';
import { isTesseraError } from '../errors.js';
import type { EventLog } from '../events/log.js';
import type { RateLimits } from '../limits/rate-limits.js';
import type { RequestContext } from '../request-context.js';
import { invalidClient, type ClientCredentials } from './credentials.js';

/**
 * Which of the app's ClientSecrets a request was authenticated with: the current one, or the one a
 * rotation with a grace period replaced, while that period lasts.
 */
export type AdminSecret = 'current' | 'previous';

/** The ClientSecret last verified for an app's record, and which of its secrets it is. */
interface VerifiedSecret {
  clientSecret: string;
  which: AdminSecret;
}

/** Compared with when an app has no previous secret, so that the work is the same either way. */
const NO_PREVIOUS_SECRET = Buffer.alloc(32);

/**
 * Whether `credentials` are the app's ClientID and ClientSecret, and with which secret; null when
 * they are not. The previous secret counts only before its `validUntil` (`now` is the caller's
 * clock). Constant-time: an unknown ClientID, a wrong secret and either secret do the same work
 * (both comparisons are always made).
 */
export function matchAdminCredentials(app: AppRecord, { clientId, clientSecret }: ClientCredentials, now: number): AdminSecret | null {
  const digest = clientSecretDigest(clientSecret);
  const clientIdMatches = credentialsEqual(clientId, app.clientId);
  const currentMatches = digestsEqual(digest, app.clientSecretHash);
  const previous = app.previousSecret;
  const previousMatches = digestsEqual(digest, previous?.hash ?? NO_PREVIOUS_SECRET);
  if (!clientIdMatches) return null;
  if (currentMatches) return 'current';
  return previousMatches && previousSecretValid(app, now) ? 'previous' : null;
}

/** Whether the app's previous ClientSecret still works at `now` (its grace period has not ended). */
function previousSecretValid(app: AppRecord, now: number): boolean {
  return app.previousSecret !== null && now < app.previousSecret.validUntil;
}

/**
 * An admin attempt (a token request, or RFC 7009/7662 client authentication), under the limits on
 * failed admin attempts: a failure is counted and recorded, and fails as `invalid_client`. An
 * attempt those limits refuse (429) is counted as `token.throttled`, with the limit as its reason
 * (`address` or `app`): only counted, never a row (`retentionOf`), since anyone can cause any
 * number of them.
 */
export class AdminAuthentication {
  /**
   * The ClientSecret last verified for each app record in memory. Server code presents the same
   * secret for every token, and a constant-time comparison with it costs a small part of its HMAC
   * (about 2.5 µs of an admin token's 31). Kept in memory only, as cached token verifiers are; a
   * rotation replaces the app's record, which forgets it. Any other secret, right or wrong, and any
   * other ClientID take the full path of `matchAdminCredentials`.
   */
  readonly #verified = new WeakMap<AppRecord, VerifiedSecret>();

  constructor(
    private readonly limits: RateLimits,
    private readonly events: EventLog,
    private readonly clock: Clock,
  ) {}

  /** `matchAdminCredentials` at this instant, with nothing counted or recorded. */
  match(app: AppRecord, credentials: ClientCredentials): AdminSecret | null {
    const now = this.clock.now();
    const known = this.#verified.get(app);
    if (
      known !== undefined &&
      credentialsEqual(credentials.clientSecret, known.clientSecret) &&
      credentialsEqual(credentials.clientId, app.clientId)
    ) {
      return known.which === 'current' || previousSecretValid(app, now) ? known.which : null;
    }
    const which = matchAdminCredentials(app, credentials, now);
    if (which !== null) this.#verified.set(app, { clientSecret: ownKey(credentials.clientSecret), which });
    return which;
  }

  async authenticate(app: AppRecord, credentials: ClientCredentials, context: RequestContext): Promise<AdminSecret> {
    const secret = this.match(app, credentials);
    // The limiter is asked only after the check, with no await in between, so that attempts are
    // counted in the order they are decided: of any burst, only the first failures of the minute
    // are answered 401; every later attempt from that address (or, past the app's ceiling, on that
    // app), the right secret included, gets 429.
    try {
      if (secret === null) {
        await this.limits.recordAdminFailure(app.appId, context.clientAddress);
        this.events.record('token.refused', app.appId, context, 'admin', { reason: 'invalid_client' });
        throw invalidClient();
      }
      await this.limits.checkAdminAttempt(app.appId, context.clientAddress);
      return secret;
    } catch (error) {
      // Only a refusal by these limits does more work: a count in the event log's buffer.
      if (isTesseraError(error) && error.details.adminLimit !== undefined) {
        this.events.record('token.throttled', app.appId, context, 'admin', { reason: error.details.adminLimit });
      }
      throw error;
    }
  }
}
