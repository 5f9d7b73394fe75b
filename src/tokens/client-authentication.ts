import type { AppRecord } from '../apps/app.js';
import { clientSecretDigest, credentialsEqual, digestsEqual } from '../crypto.js';
import type { EventLog } from '../events/log.js';
import type { RateLimits } from '../limits/rate-limits.js';
import type { RequestContext } from '../request-context.js';
import { invalidClient, type ClientCredentials } from './credentials.js';

/** Which of the app's ClientSecrets a request was authenticated with. */
export type AdminSecret = 'current';

/**
 * Whether `credentials` are the app's ClientID and ClientSecret, and with which secret; null when
 * they are not. Constant-time: an unknown ClientID and a wrong secret do the same work.
 */
export function matchAdminCredentials(app: AppRecord, { clientId, clientSecret }: ClientCredentials): AdminSecret | null {
  const clientIdMatches = credentialsEqual(clientId, app.clientId);
  const secretMatches = digestsEqual(clientSecretDigest(clientSecret), app.clientSecretHash);
  return clientIdMatches && secretMatches ? 'current' : null;
}

/**
 * An admin attempt (a token request, or RFC 7009/7662 client authentication), under the limits on
 * failed admin attempts: a failure is counted and recorded, and fails as `invalid_client`.
 */
export class AdminAuthentication {
  constructor(
    private readonly limits: RateLimits,
    private readonly events: EventLog,
  ) {}

  async authenticate(app: AppRecord, credentials: ClientCredentials, context: RequestContext): Promise<AdminSecret> {
    const secret = matchAdminCredentials(app, credentials);
    // The limiter is asked only after the check, with no await in between, so that attempts are
    // counted in the order they are decided: of any burst, only the first failures of the minute
    // are answered 401; every later attempt from that address (or, past the app's ceiling, on that
    // app), the right secret included, gets 429.
    if (secret === null) {
      await this.limits.recordAdminFailure(app.appId, context.clientAddress);
      this.events.record('token.refused', app.appId, context, 'admin', { reason: 'invalid_client' });
      throw invalidClient();
    }
    await this.limits.checkAdminAttempt(app.appId, context.clientAddress);
    return secret;
  }
}
