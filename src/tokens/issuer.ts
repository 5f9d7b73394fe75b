import type { AppRecord } from '../apps/app.js';
import type { Clock } from '../clock.js';
import { credentialsEqual } from '../crypto.js';
import type { AdminAuthentication, AdminSecret } from './client-authentication.js';
import { invalidClient, type ClientCredentials } from './credentials.js';
import type { EventLog } from '../events/log.js';
import type { PrincipalKind } from '../principal.js';
import type { RequestContext } from '../request-context.js';
import type { AnonymousTokens } from './anonymous-tokens.js';
import { refuseBrowserAdminAttempt } from './browser-admin-attempts.js';
import { principalId } from './checker.js';
import { expiresInSeconds, resolveExpiry } from './expiry.js';
import type { TokenStore } from './store.js';
import { generateAccessToken } from './token.js';

/** A token request, parsed: who asks, and until when the token should work. */
export interface TokenRequestInput {
  credentials: ClientCredentials;
  /** UNIX ms, or null for a token that never expires. */
  expiresAt: number | null;
}

export interface IssuedToken {
  /** The app's admin id for an admin token, `ANONYMOUS` for an anonymous one. */
  id: string;
  accessToken: string;
  /** Seconds from the request to the expiry, rounded down (`NEVER_EXPIRES_IN` for never). */
  expiresIn: number;
  kind: PrincipalKind;
}

/**
 * Issues tokens for an app's credentials: authenticates the client (with the limits on failed admin
 * attempts), applies the app's maximum lifetime, and makes the token: an admin token is stored, an
 * anonymous one is self-verifying and writes nothing. Records the event. Knows nothing of HTTP.
 */
export class TokenIssuer {
  constructor(
    private readonly tokens: TokenStore,
    private readonly anonymous: AnonymousTokens,
    private readonly clock: Clock,
    private readonly admins: AdminAuthentication,
    private readonly events: EventLog,
  ) {}

  async issue(app: AppRecord, { credentials, expiresAt: requested }: TokenRequestInput, context: RequestContext): Promise<IssuedToken> {
    const now = this.clock.now();
    const { kind, secret } = await this.#authenticateClient(app, credentials, context);
    const maxLifetime =
      kind === 'admin' ? app.configuration.adminTokenMaxLifetimeSeconds : app.configuration.anonymousTokenMaxLifetimeSeconds;
    const expiresAt = resolveExpiry(now, requested, maxLifetime);
    const accessToken =
      kind === 'admin' ? await this.#storedToken(app, now, expiresAt) : (await this.anonymous.issue(app, now, expiresAt)).token;
    // Which secret an admin token was issued with, so that the operator sees when, after a rotation
    // with a grace period, the previous one is no longer used.
    this.events.record('token.issued', app.appId, context, kind, secret === null ? { expiresAt } : { expiresAt, secret });
    return { id: principalId(app, kind), accessToken, expiresIn: expiresInSeconds(now, expiresAt), kind };
  }

  async #storedToken(app: AppRecord, now: number, expiresAt: number | null): Promise<string> {
    const { token, selector, verifierHash } = generateAccessToken(now);
    await this.tokens.insert({ selector, verifierHash, appId: app.appId, kind: 'admin', issuedAt: now, expiresAt });
    return token;
  }

  /**
   * `client_id` = AppID: anonymous (the AppKey is checked only if the app asks for it).
   * Anything else is an admin attempt: an unknown ClientID and a wrong ClientSecret take the same
   * path, do the same work, and fail the same way; from a browser, every admin attempt is refused.
   */
  async #authenticateClient(
    app: AppRecord,
    credentials: ClientCredentials,
    context: RequestContext,
  ): Promise<{ kind: PrincipalKind; secret: AdminSecret | null }> {
    if (credentials.clientId === app.appId) {
      if (app.configuration.requireAppKey && !credentialsEqual(credentials.clientSecret, app.appKey)) {
        this.events.record('token.refused', app.appId, context, 'anonymous', { reason: 'invalid_client' });
        throw invalidClient();
      }
      return { kind: 'anonymous', secret: null };
    }
    const { origin } = context;
    if (origin !== undefined) return refuseBrowserAdminAttempt(this.admins, this.events, app, credentials, { ...context, origin });
    return { kind: 'admin', secret: await this.admins.authenticate(app, credentials, context) };
  }
}
