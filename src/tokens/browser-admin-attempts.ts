import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { canonicalOrigin } from 'tessera-tokens/internal/apps/origins.js';
import { isTesseraError, TesseraError } from 'tessera-tokens/internal/errors.js';
import type { EventLog } from '../events/log.js';
import type { RequestContext } from '../request-context.js';
import type { AdminAuthentication } from './client-authentication.js';
import type { ClientCredentials } from './client-credentials.js';

const TOKEN_REQUEST_REFUSED =
  'Admin tokens are not issued to browsers: the ClientSecret must stay in server-side code. ' +
  'Request admin tokens from your server; a web page uses an anonymous token (client_id = AppID, client_secret = AppKey).';
const CLIENT_AUTHENTICATION_REFUSED =
  'The ClientID and ClientSecret are not accepted from browsers: the ClientSecret must stay in server-side code. ' +
  'A web page revokes its own token with the token itself, or with the AppID and AppKey.';

/**
 * The seed's rule 2: "The ClientID and ClientSecret must not be embedded in a client application."
 * An admin-token request from a browser (it carries `Origin`) is refused, whether its secret is
 * right or wrong, with the same answer and the same work: the secret is matched, and the attempt
 * goes through the limits on failed admin attempts like any other (a wrong secret is counted and
 * recorded as `token.refused`; past a limit the answer is `429`, right secret or wrong). A right
 * secret has leaked into a web page: `app.secret_exposed` tells the operator, who should rotate it.
 * docs/decisions.md ("Browser apps"), docs/security.md ("A ClientSecret in a web page").
 */
export async function refuseBrowserAdminAttempt(
  admins: AdminAuthentication,
  events: EventLog,
  app: AppRecord,
  credentials: ClientCredentials,
  context: RequestContext & { origin: string },
  attempt: 'token request' | 'client authentication' = 'token request',
): Promise<never> {
  const matched = admins.match(app, credentials, context.clientAddress);
  if ('secret' in matched) {
    const { secret, credential } = matched;
    events.record('app.secret_exposed', app.appId, context, 'admin', {
      secret,
      origin: recordedOrigin(context.origin),
      ...(credential === null ? {} : { clientId: credential.clientId }),
    });
  }
  try {
    await admins.authenticate(app, credentials, context);
  } catch (error) {
    // The refusal below stands for a wrong secret too; a limit's 429 stays.
    if (!isTesseraError(error) || error.code !== 'invalid_client') throw error;
  }
  throw new TesseraError('unauthorized_client', attempt === 'token request' ? TOKEN_REQUEST_REFUSED : CLIENT_AUTHENTICATION_REFUSED);
}

/** The origin as browsers send it, or `null` (opaque origins, and anything that is not an origin). */
function recordedOrigin(origin: string): string | null {
  return canonicalOrigin(origin) === origin ? origin : null;
}
