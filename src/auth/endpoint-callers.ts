import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { EventLog } from '../events/log.js';
import { ANONYMOUS_ID, type Principal } from 'tessera-tokens/internal/principal.js';
import { anonymousRequest } from '../request-context.js';
import { parseAuthorization } from 'tessera-tokens/internal/tokens/authorization-header.js';
import { refuseBrowserAdminAttempt } from '../tokens/browser-admin-attempts.js';
import type { AdminAuthentication } from '../tokens/client-authentication.js';
import { clientCredentials, type BodyCredentials } from '../tokens/client-credentials.js';
import type { RequestAuthenticator } from 'tessera-tokens/internal/auth/authenticate.js';

/** What a revocation or introspection request says of who sends it. */
export interface EndpointCallerRequest {
  /** The `Authorization` header, as sent. */
  authorization: string | undefined;
  /** Node's `rawHeaders`, for deployed SDK clients' `X-Kii-AppID` and `X-Kii-AppKey`. */
  rawHeaders: readonly string[];
  path: string;
  clientAddress: string;
  /** `Origin`, which every browser sends: admin credentials from a browser are refused (the seed's rule 2). */
  origin: string | undefined;
  /** `client_id` and `client_secret` from the body (RFC 6749 `client_secret_post`). */
  body: BodyCredentials;
}

/**
 * Who calls revocation (RFC 7009) or introspection (RFC 7662). Either as on every other path (a
 * token, Basic anonymous access, an SDK's `X-Kii-AppID`), or as an OAuth client does there (RFC 7009
 * §2.1, RFC 7662 §2.1): its own credentials, `client_secret_basic` or `client_secret_post`.
 * ClientID and ClientSecret are an admin attempt under the limits on failed admin attempts, and make
 * the caller the app's admin; AppID and AppKey make it anonymous, as Basic anonymous access does
 * (the AppKey is not checked: Basic anonymous access never needs it). ClientID and ClientSecret
 * from a browser are refused as on the token paths.
 */
export class EndpointCallers {
  constructor(
    private readonly authenticator: RequestAuthenticator,
    private readonly admins: AdminAuthentication,
    private readonly events: EventLog,
  ) {}

  async callerOf(app: AppRecord, request: EndpointCallerRequest): Promise<Principal> {
    const authorization = parseAuthorization(request.authorization);
    const inBody = request.body.clientId !== undefined || request.body.clientSecret !== undefined;
    const malformed = request.authorization !== undefined && authorization.scheme === 'none';
    if (malformed || (!inBody && (authorization.scheme !== 'basic' || authorization.user === app.appId))) {
      const { authorization: header, rawHeaders, path, clientAddress } = request;
      return this.authenticator.authenticate({ appId: app.appId, authorization: header, rawHeaders, path, clientAddress });
    }
    if (authorization.scheme === 'bearer') {
      throw new TesseraError('invalid_request', 'Send either a bearer token or client credentials, not both (RFC 6749 section 2.3).');
    }
    const credentials = clientCredentials(app, authorization, request.body)!;
    if (credentials.clientId === app.appId) return anonymousCaller(app);
    const context = anonymousRequest(request.clientAddress);
    const { origin } = request;
    if (origin !== undefined)
      return refuseBrowserAdminAttempt(this.admins, this.events, app, credentials, { ...context, origin }, 'client authentication');
    const { credential } = await this.admins.authenticate(app, credentials, context);
    return {
      appId: app.appId,
      kind: 'admin',
      id: app.adminId,
      auth: 'basic',
      expiresAt: null,
      scopes: credential?.scopes ?? null,
      clientId: credential?.clientId ?? null,
    };
  }
}

function anonymousCaller(app: AppRecord): Principal {
  return { appId: app.appId, kind: 'anonymous', id: ANONYMOUS_ID, auth: 'basic', expiresAt: null, scopes: null, clientId: null };
}
