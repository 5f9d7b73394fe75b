import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { decodeFormComponent, type AuthorizationCredentials } from 'tessera-tokens/internal/tokens/authorization-header.js';

/** Who asks for a token: the ClientID and ClientSecret (admin), or the AppID and AppKey (anonymous). */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** The `client_id` and `client_secret` a request body carries (RFC 6749 `client_secret_post`), each maybe absent. */
export interface BodyCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
}

/**
 * The client credentials of a request (RFC 6749 §2.3.1) from its `Authorization` header and its
 * body; undefined when it carries none (no Basic header, nothing in the body).
 *
 * - `Basic base64(AppID:anything)`, as the seed shows: the credentials are in the body. With none
 *   there, it is RFC 6749's `client_secret_basic` of the anonymous client: the password is the AppKey.
 * - Any other Basic user is `client_secret_basic` with `ClientID:ClientSecret` (form-decoded): an
 *   admin attempt, checked like any other, so a wrong user part fails as `invalid_client`. Body
 *   credentials that disagree with it are `400 invalid_request` (RFC 6749 §2.3: one method only).
 * - No Basic header: the body's (`client_secret_post`); the path, or `X-Kii-AppID`, names the app.
 */
export function clientCredentials(
  app: AppRecord,
  authorization: AuthorizationCredentials,
  body: BodyCredentials,
): ClientCredentials | undefined {
  const inBody = body.clientId !== undefined || body.clientSecret !== undefined;
  if (authorization.scheme !== 'basic') return inBody ? bodyCredentials(body) : undefined;
  // The seed's header names the AppID as it is: the common case decodes nothing.
  const user = authorization.user === app.appId ? app.appId : decodeFormComponent(authorization.user);
  if (user === app.appId && inBody) return bodyCredentials(body);
  const password = decodeFormComponent(authorization.password);
  if (user === app.appId) {
    if (password === '') {
      throw new TesseraError(
        'invalid_request',
        'client_secret is required: send the AppKey as the Basic password, or client_id and client_secret in the body.',
      );
    }
    return { clientId: user, clientSecret: password };
  }
  if ((body.clientId !== undefined && body.clientId !== user) || (body.clientSecret !== undefined && body.clientSecret !== password)) {
    throw new TesseraError(
      'invalid_request',
      'The client credentials in the Authorization header and in the body differ; send them in one place (RFC 6749 section 2.3).',
    );
  }
  return { clientId: user, clientSecret: password };
}

function bodyCredentials(body: BodyCredentials): ClientCredentials {
  if (body.clientId === undefined) throw new TesseraError('invalid_request', 'client_id is required.');
  if (body.clientSecret === undefined) throw new TesseraError('invalid_request', 'client_secret is required.');
  return { clientId: body.clientId, clientSecret: body.clientSecret };
}

export function invalidClient(): TesseraError {
  return new TesseraError('invalid_client', 'The client credentials are invalid.');
}

/** A token request with no credentials at all, or with another kind than a client's. */
export function clientAuthenticationRequired(): TesseraError {
  return new TesseraError(
    'invalid_client',
    'Client authentication is required: Authorization: Basic base64(AppID:AppKey) or base64(ClientID:ClientSecret), ' +
      'or client_id and client_secret in the body.',
  );
}
