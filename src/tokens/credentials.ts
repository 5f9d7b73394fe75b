import type { AppRecord } from '../apps/app.js';
import { decodeFormComponent, type AuthorizationCredentials } from '../auth/authorization.js';
import { TesseraError } from '../errors.js';
import type { TokenRequest } from './request.js';

/** Who asks for a token: the ClientID and ClientSecret (admin), or the AppID and AppKey (anonymous). */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/**
 * The credentials of a token request from its `Authorization` header and its body. With
 * `Basic base64(AppID:anything)` (or, on the SDK path, no Basic header) they are in the body. Any
 * other Basic user is taken as RFC 6749's `client_secret_basic` (`Basic base64(ClientID:ClientSecret)`):
 * an admin attempt, checked like any other, so a wrong user part fails as `invalid_client`; body
 * credentials that disagree with it fail alike.
 */
export function tokenRequestCredentials(app: AppRecord, authorization: AuthorizationCredentials, body: TokenRequest): ClientCredentials {
  if (authorization.scheme !== 'basic' || authorization.user === app.appId) return bodyCredentials(body);
  const clientId = decodeFormComponent(authorization.user);
  const clientSecret = decodeFormComponent(authorization.password);
  if ((body.clientId !== undefined && body.clientId !== clientId) || (body.clientSecret !== undefined && body.clientSecret !== clientSecret)) {
    throw invalidClient();
  }
  return { clientId, clientSecret };
}

function bodyCredentials(body: TokenRequest): ClientCredentials {
  if (body.clientId === undefined) throw new TesseraError('invalid_request', 'client_id is required.');
  if (body.clientSecret === undefined) throw new TesseraError('invalid_request', 'client_secret is required.');
  return { clientId: body.clientId, clientSecret: body.clientSecret };
}

export function invalidClient(): TesseraError {
  return new TesseraError('invalid_client', 'The client credentials are invalid.');
}
