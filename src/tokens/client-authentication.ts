import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { ownKey } from 'tessera-tokens/internal/cache/own-key.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { clientSecretDigest, credentialsEqual, digestsEqual } from 'tessera-tokens/internal/crypto.js';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import type { EventLog } from '../events/log.js';
import type { RateLimits } from '../limits/rate-limits.js';
import type { RequestContext } from '../request-context.js';
import { invalidClient, type ClientCredentials } from './client-credentials.js';
import { addressAllowed } from '../credentials/addresses.js';
import { findCredential, type CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';
import type { CredentialUse } from '../credentials/last-used.js';

/**
 * Which of a client's ClientSecrets a request was authenticated with: the current one, or the one a
 * rotation with a grace period replaced, while that period lasts.
 */
export type AdminSecret = 'current' | 'previous';

/** An admin attempt that succeeded: with which secret, and of which credential (null: the app's own ClientID). */
export interface AuthenticatedAdmin {
  secret: AdminSecret;
  credential: CredentialRecord | null;
}

/**
 * Why an admin attempt failed: a wrong ClientID or ClientSecret (`invalid_client`), or a
 * credential's right secret used after its expiry or from an address not on its list. All three
 * are answered alike (`invalid_client`); only the audit log tells them apart.
 */
export type AdminRefusal = 'invalid_client' | 'credential_expired' | 'address_not_allowed';

/** What an admin attempt matched: who, or why not (with the credential its ClientID named, if any). */
export type AdminMatch = AuthenticatedAdmin | { refusal: AdminRefusal; credential: CredentialRecord | null };

/** A client whose secrets are stored: the app (its own ClientID), or one of its credentials. */
type Client = AppRecord | CredentialRecord;

/** The digest of the client's current secret. */
function currentSecretHash(client: Client): Buffer {
  return 'secretHash' in client ? client.secretHash : client.clientSecretHash;
}

/** The ClientSecret last verified for a client's record, and which of its secrets it is. */
interface VerifiedSecret {
  clientSecret: string;
  which: AdminSecret;
}

/** Compared with when a client has no previous secret, so that the work is the same either way. */
const NO_PREVIOUS_SECRET = Buffer.alloc(32);

/**
 * Whether `credentials` are the client's ClientID and one of its secrets, and which one; null when
 * they are not. The previous secret counts only before its `validUntil` (`now` is the caller's
 * clock). Constant-time: another ClientID, a wrong secret and either secret do the same work (every
 * comparison is always made).
 */
function matchClient(client: Client, { clientId, clientSecret }: ClientCredentials, now: number): AdminSecret | null {
  const digest = clientSecretDigest(clientSecret);
  const clientIdMatches = credentialsEqual(clientId, client.clientId);
  const currentMatches = digestsEqual(digest, currentSecretHash(client));
  const previousMatches = digestsEqual(digest, client.previousSecret?.hash ?? NO_PREVIOUS_SECRET);
  if (!clientIdMatches) return null;
  if (currentMatches) return 'current';
  return previousMatches && previousSecretValid(client, now) ? 'previous' : null;
}

/** Whether `credentials` are the app's own ClientID and ClientSecret, and with which secret (`matchClient`). */
export function matchAdminCredentials(app: AppRecord, credentials: ClientCredentials, now: number): AdminSecret | null {
  return matchClient(app, credentials, now);
}

/** Whether a client's previous ClientSecret still works at `now` (its grace period has not ended). */
function previousSecretValid(client: Client, now: number): boolean {
  return client.previousSecret !== null && now < client.previousSecret.validUntil;
}

/**
 * An admin attempt (a token request, or RFC 7009/7662 client authentication), with the app's own
 * ClientID or one of its credentials', under the limits on failed admin attempts: a failure is
 * counted and recorded, and fails as `invalid_client`. An attempt those limits refuse (429) is
 * counted as `token.throttled`, with the limit as its reason (`address` or `app`): only counted,
 * never a row (`retentionOf`), since anyone can cause any number of them.
 */
export class AdminAuthentication {
  /**
   * The ClientSecret last verified for each client's record in memory (an app's, or a
   * credential's). Server code presents the same secret for every token, and a constant-time
   * comparison with it costs a small part of its HMAC (about 2.5 µs of an admin token's 31). Kept in
   * memory only, as cached token verifiers are; a rotation replaces the app's record, and with it
   * its credentials' records, which forgets it. Any other secret, right or wrong, takes the full path.
   */
  readonly #verified = new WeakMap<Client, VerifiedSecret>();

  constructor(
    private readonly limits: RateLimits,
    private readonly events: EventLog,
    private readonly clock: Clock,
    /** Told when a credential authenticated, to record when it was last used. */
    private readonly credentialUse?: CredentialUse,
  ) {}

  /**
   * Who `credentials` authenticate at this instant, from `clientAddress`, with nothing counted or
   * recorded. A credential's wrong secret, expiry and address are all checked, whichever fails, so
   * that the three refusals do the same work.
   */
  match(app: AppRecord, credentials: ClientCredentials, clientAddress: string | null): AdminMatch {
    const now = this.clock.now();
    const credential = findCredential(app.credentials, credentials.clientId);
    if (credential === undefined) {
      const secret = this.#secretOf(app, credentials, now);
      return secret === null ? { refusal: 'invalid_client', credential: null } : { secret, credential: null };
    }
    const expired = credential.expiresAt !== null && now >= credential.expiresAt;
    const allowed = addressAllowed(credential.allowFrom, clientAddress);
    // A refusal always costs the full check of the secret, never the remembered one's quicker
    // comparison: a stolen secret tried from elsewhere must not learn from the timing that it is right.
    const secret = expired || !allowed ? matchClient(credential, credentials, now) : this.#secretOf(credential, credentials, now);
    if (secret === null) return { refusal: 'invalid_client', credential };
    if (expired) return { refusal: 'credential_expired', credential };
    if (!allowed) return { refusal: 'address_not_allowed', credential };
    return { secret, credential };
  }

  /** Which of the client's secrets `credentials` carry (the app's own ClientID only for an app), or null. */
  #secretOf(client: Client, credentials: ClientCredentials, now: number): AdminSecret | null {
    const known = this.#verified.get(client);
    if (
      known !== undefined &&
      credentialsEqual(credentials.clientSecret, known.clientSecret) &&
      credentialsEqual(credentials.clientId, client.clientId)
    ) {
      return known.which === 'current' || previousSecretValid(client, now) ? known.which : null;
    }
    const which = matchClient(client, credentials, now);
    if (which !== null) this.#verified.set(client, { clientSecret: ownKey(credentials.clientSecret), which });
    return which;
  }

  async authenticate(app: AppRecord, credentials: ClientCredentials, context: RequestContext): Promise<AuthenticatedAdmin> {
    const matched = this.match(app, credentials, context.clientAddress);
    // The limiter is asked only after the check, with no await in between, so that attempts are
    // counted in the order they are decided: of any burst, only the first failures of the minute
    // are answered 401; every later attempt from that address (or, past the app's ceiling, on that
    // app), the right secret included, gets 429.
    try {
      if ('refusal' in matched) {
        await this.limits.recordAdminFailure(app.appId, context.clientAddress);
        this.#recordRefusal(app, matched.refusal, matched.credential, context);
        throw invalidClient();
      }
      await this.limits.checkAdminAttempt(app.appId, context.clientAddress);
      if (matched.credential !== null) this.credentialUse?.used(matched.credential, this.clock.now());
      return matched;
    } catch (error) {
      // Only a refusal by these limits does more work: a count in the event log's buffer.
      if (isTesseraError(error) && error.details.adminLimit !== undefined) {
        this.events.record('token.throttled', app.appId, context, 'admin', { reason: error.details.adminLimit });
      }
      throw error;
    }
  }

  /**
   * A wrong secret is a `token.refused` (a refusal anyone who knows a ClientID can cause); a
   * credential's right secret refused for its expiry or its address is `credential.refused`, kept
   * with the audit events, since only a holder of the secret can cause it. Neither names anyone as
   * its actor, and neither names a secret.
   */
  #recordRefusal(app: AppRecord, refusal: AdminRefusal, credential: CredentialRecord | null, context: RequestContext): void {
    if (refusal === 'invalid_client') {
      this.events.record('token.refused', app.appId, context, 'admin', {
        reason: 'invalid_client',
        ...(credential === null ? {} : { clientId: credential.clientId }),
      });
      return;
    }
    this.events.record('credential.refused', app.appId, context, null, {
      reason: refusal,
      clientId: credential!.clientId,
      name: credential!.name,
    });
  }
}
