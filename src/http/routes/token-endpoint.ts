import type { FastifyPluginAsync } from 'fastify';
import type { AppCache } from '../../apps/cache.js';
import { SDK_APP_ID } from '../../auth/authenticate.js';
import { parseAuthorization } from '../../tokens/authorization-header.js';
import { scopeParameter } from '../../credentials/scopes.js';
import { TesseraError } from '../../errors.js';
import type { RateLimits } from '../../limits/rate-limits.js';
import { anonymousRequest } from '../../request-context.js';
import { clientAuthenticationRequired, clientCredentials } from '../../tokens/credentials.js';
import type { IssuedToken, TokenIssuer } from '../../tokens/issuer.js';
import { parseTokenRequest } from '../../tokens/request.js';
import { acceptFormBodies, acceptKiiTokenRequestBodies } from '../content-types.js';
import { preventCaching, singleHeader } from '../headers.js';
import { refuseOtherMethods } from '../methods.js';
import { APP_TOKEN_PATH, SDK_TOKEN_PATH } from '../paths.js';

const tokenResponseSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    access_token: { type: 'string' },
    expires_in: { type: 'integer' },
    token_type: { type: 'string' },
    scope: { type: 'string' },
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
    const header = singleHeader(request.raw, 'authorization');
    const authorization = parseAuthorization(header);
    // No header at all is RFC 6749's client_secret_post: the path names the app, the body the client.
    if (header !== undefined && authorization.scheme !== 'basic') throw clientAuthenticationRequired();
    const body = parseTokenRequest(request.body, { grantTypeRequired: true });
    const credentials = clientCredentials(app, authorization, body) ?? throwError(clientAuthenticationRequired());
    return tokenResponse(
      await issuer.issue(
        app,
        { credentials, expiresAt: body.expiresAt, scope: body.scope },
        anonymousRequest(request.ip, request.headers.origin),
      ),
    );
  });

  app.post(SDK_TOKEN_PATH, { schema }, async (request) => {
    await limits.checkTokenRequest(request.ip);
    const appId = singleHeader(request.raw, SDK_APP_ID);
    if (appId === undefined) throw new TesseraError('invalid_request', 'The X-Kii-AppID header is required.');
    const app = await apps.require(appId);
    const authorization = parseAuthorization(singleHeader(request.raw, 'authorization'));
    const body = parseTokenRequest(request.body, { grantTypeRequired: false });
    const credentials = clientCredentials(app, authorization, body) ?? throwError(clientAuthenticationRequired());
    return tokenResponse(
      await issuer.issue(
        app,
        { credentials, expiresAt: body.expiresAt, scope: body.scope },
        anonymousRequest(request.ip, request.headers.origin),
      ),
    );
  });

  refuseOtherMethods(app, APP_TOKEN_PATH, ['POST']);
  refuseOtherMethods(app, SDK_TOKEN_PATH, ['POST']);
};

/** The seed's four fields; a token with scopes adds `scope` (RFC 6749 §5.1). */
function tokenResponse({ id, accessToken, expiresIn, scopes }: IssuedToken) {
  if (scopes === null) return { id, access_token: accessToken, expires_in: expiresIn, token_type: 'bearer' };
  return { id, access_token: accessToken, expires_in: expiresIn, token_type: 'bearer', scope: scopeParameter(scopes) };
}

function throwError(error: Error): never {
  throw error;
}
