import type { FastifyPluginAsync } from 'fastify';
import type { AppRecord } from '../apps/app.js';
import { decodeFormComponent, parseAuthorization } from '../auth/authorization.js';
import { TesseraError } from '../errors.js';
import { acceptFormBodies, acceptKiiTokenRequestBodies } from '../http/content-types.js';
import { preventCaching, singleHeader } from '../http/headers.js';
import { refuseOtherMethods } from '../http/methods.js';
import type { Tessera } from '../tessera.js';
import { parseTokenRequest, type TokenRequest } from './request.js';
import { invalidClient, type ClientCredentials, type IssuedToken } from './service.js';

export const APP_TOKEN_PATH = '/api/apps/:appId/oauth2/token';
/** Where deployed SDK clients ask for tokens: the app comes from `X-Kii-AppID`. */
export const SDK_TOKEN_PATH = '/api/oauth2/token';

const tokenResponseSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    access_token: { type: 'string' },
    expires_in: { type: 'integer' },
    token_type: { type: 'string' },
  },
  required: ['id', 'access_token', 'expires_in', 'token_type'],
  additionalProperties: false,
} as const;

const schema = { response: { 200: tokenResponseSchema } };

/** The token endpoint, and its twin for deployed SDK clients. */
export const tokenRoutes: FastifyPluginAsync<{ tessera: Tessera }> = async (app, { tessera }) => {
  acceptKiiTokenRequestBodies(app);
  acceptFormBodies(app);

  // RFC 6749 §5.1: token responses, and the errors among them, must not be cached.
  preventCaching(app);

  app.post<{ Params: { appId: string } }>(APP_TOKEN_PATH, { schema }, async (request) => {
    await tessera.limits.checkTokenRequest(request.ip);
    const app = await tessera.appCache.require(request.params.appId);
    const authorization = parseAuthorization(singleHeader(request.raw, 'authorization'));
    if (authorization.scheme !== 'basic') {
      throw new TesseraError('invalid_client', 'Send Authorization: Basic base64(AppID:anything) with the token request.');
    }
    const body = parseTokenRequest(request.body, { grantTypeRequired: true });
    return tokenResponse(await tessera.tokens.issue(app, credentialsOf(app, authorization, body), body.expiresAt, { clientAddress: request.ip }));
  });

  app.post(SDK_TOKEN_PATH, { schema }, async (request) => {
    await tessera.limits.checkTokenRequest(request.ip);
    const appId = singleHeader(request.raw, 'x-kii-appid');
    if (appId === undefined) throw new TesseraError('invalid_request', 'The X-Kii-AppID header is required.');
    const app = await tessera.appCache.require(appId);
    const authorization = parseAuthorization(singleHeader(request.raw, 'authorization'));
    const body = parseTokenRequest(request.body, { grantTypeRequired: false });
    const credentials =
      authorization.scheme === 'basic' ? credentialsOf(app, authorization, body) : bodyCredentials(body);
    return tokenResponse(await tessera.tokens.issue(app, credentials, body.expiresAt, { clientAddress: request.ip }));
  });

  refuseOtherMethods(app, APP_TOKEN_PATH, ['POST']);
  refuseOtherMethods(app, SDK_TOKEN_PATH, ['POST']);
};

function tokenResponse(issued: IssuedToken) {
  return { id: issued.id, access_token: issued.accessToken, expires_in: issued.expiresIn, token_type: 'bearer' };
}

/**
 * With `Basic base64(AppID:anything)` the credentials are in the body. Any other Basic user is taken
 * as RFC 6749's `client_secret_basic` (`Basic base64(ClientID:ClientSecret)`): an admin attempt,
 * checked like any other, so a wrong user part fails as `invalid_client`.
 */
function credentialsOf(
  app: AppRecord,
  authorization: { user: string; password: string },
  body: TokenRequest,
): ClientCredentials {
  if (authorization.user === app.appId) return bodyCredentials(body);
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
