import type { FastifyPluginAsync } from 'fastify';
import type { AppCache } from '../apps/cache.js';
import { parseAuthorization } from '../auth/authorization.js';
import { TesseraError } from '../errors.js';
import { acceptFormBodies, acceptKiiTokenRequestBodies } from '../http/content-types.js';
import { preventCaching, singleHeader } from '../http/headers.js';
import { refuseOtherMethods } from '../http/methods.js';
import type { RateLimits } from '../limits/rate-limits.js';
import { anonymousRequest } from '../request-context.js';
import { tokenRequestCredentials } from './credentials.js';
import type { IssuedToken, TokenIssuer } from './issuer.js';
import { parseTokenRequest } from './request.js';

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

/** What the token endpoints use. */
export interface TokenRoutesOptions {
  apps: AppCache;
  issuer: TokenIssuer;
  limits: RateLimits;
}

/** The token endpoint, and its twin for deployed SDK clients. */
export const tokenRoutes: FastifyPluginAsync<TokenRoutesOptions> = async (app, { apps, issuer, limits }) => {
  acceptKiiTokenRequestBodies(app);
  acceptFormBodies(app);

  // RFC 6749 §5.1: token responses, and the errors among them, must not be cached.
  preventCaching(app);

  app.post<{ Params: { appId: string } }>(APP_TOKEN_PATH, { schema }, async (request) => {
    await limits.checkTokenRequest(request.ip);
    const app = await apps.require(request.params.appId);
    const authorization = parseAuthorization(singleHeader(request.raw, 'authorization'));
    if (authorization.scheme !== 'basic') {
      throw new TesseraError('invalid_client', 'Send Authorization: Basic base64(AppID:anything) with the token request.');
    }
    const body = parseTokenRequest(request.body, { grantTypeRequired: true });
    const input = { credentials: tokenRequestCredentials(app, authorization, body), expiresAt: body.expiresAt };
    return tokenResponse(await issuer.issue(app, input, anonymousRequest(request.ip, request.headers.origin)));
  });

  app.post(SDK_TOKEN_PATH, { schema }, async (request) => {
    await limits.checkTokenRequest(request.ip);
    const appId = singleHeader(request.raw, 'x-kii-appid');
    if (appId === undefined) throw new TesseraError('invalid_request', 'The X-Kii-AppID header is required.');
    const app = await apps.require(appId);
    const authorization = parseAuthorization(singleHeader(request.raw, 'authorization'));
    const body = parseTokenRequest(request.body, { grantTypeRequired: false });
    const input = { credentials: tokenRequestCredentials(app, authorization, body), expiresAt: body.expiresAt };
    return tokenResponse(await issuer.issue(app, input, anonymousRequest(request.ip, request.headers.origin)));
  });

  refuseOtherMethods(app, APP_TOKEN_PATH, ['POST']);
  refuseOtherMethods(app, SDK_TOKEN_PATH, ['POST']);
};

function tokenResponse(issued: IssuedToken) {
  return { id: issued.id, access_token: issued.accessToken, expires_in: issued.expiresIn, token_type: 'bearer' };
}
