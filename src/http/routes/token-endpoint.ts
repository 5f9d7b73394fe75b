import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { SDK_APP_ID } from 'tessera-tokens/internal/auth/authenticate.js';
import { parseAuthorization } from 'tessera-tokens/internal/tokens/authorization-header.js';
import { scopeParameter } from 'tessera-tokens/internal/credentials/scopes.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { RateLimits } from '../../limits/rate-limits.js';
import { ATTESTATION_HEADER } from '../../attestation/header.js';
import { anonymousRequest } from '../../request-context.js';
import { clientAuthenticationRequired, clientCredentials } from '../../tokens/client-credentials.js';
import type { IssuedToken, TokenIssuer } from '../../tokens/issuer.js';
import { parseTokenRequest, type TokenRequest } from '../../tokens/request.js';
import { acceptFormFields, acceptKiiTokenRequestBodies } from '../content-types.js';
import { preventCaching, singleHeader } from 'tessera-tokens/internal/http/headers.js';
import { refuseOtherMethods } from '../methods.js';
import { APP_TOKEN_PATH, SDK_TOKEN_PATH } from '../paths.js';
import {
  issueToken,
  issueTokenForSdk,
  preflightSdkToken,
  preflightToken,
  sdkTokenEndpointOtherMethods,
  TOKEN_REQUEST_FIELDS,
  tokenEndpointOtherMethods,
} from './token-endpoint.schema.js';

/** What the token endpoints use. */
export interface TokenRoutesOptions {
  apps: AppCache;
  issuer: TokenIssuer;
  limits: RateLimits;
}

/** The token endpoint, and its twin for deployed SDK clients. */
export const tokenRoutes: FastifyPluginAsyncTypebox<TokenRoutesOptions> = async (app, { apps, issuer, limits }) => {
  acceptKiiTokenRequestBodies(app);
  acceptFormFields(app, TOKEN_REQUEST_FIELDS);

  // RFC 6749 §5.1: token responses, and the errors among them, must not be cached.
  preventCaching(app);

  // The schema's refusal is answered after the address's limit and the app's lookup (`tokenRequest`),
  // as a malformed request always was: a flood of them is limited, and an unknown app is a 404 first.
  app.post(APP_TOKEN_PATH, { schema: issueToken, attachValidation: true }, async (request) => {
    await limits.checkTokenRequest(request.ip);
    const app = await apps.require(request.params.appId);
    const header = singleHeader(request.raw, 'authorization');
    const authorization = parseAuthorization(header);
    // No header at all is RFC 6749's client_secret_post: the path names the app, the body the client.
    if (header !== undefined && authorization.scheme !== 'basic') throw clientAuthenticationRequired();
    const body = tokenRequest(request, true);
    const credentials = clientCredentials(app, authorization, body) ?? throwError(clientAuthenticationRequired());
    return tokenResponse(
      await issuer.issue(
        app,
        { credentials, expiresAt: body.expiresAt, scope: body.scope, attestation: singleHeader(request.raw, ATTESTATION_HEADER) },
        anonymousRequest(request.ip, request.headers.origin),
      ),
    );
  });

  app.post(SDK_TOKEN_PATH, { schema: issueTokenForSdk, attachValidation: true }, async (request) => {
    await limits.checkTokenRequest(request.ip);
    const appId = singleHeader(request.raw, SDK_APP_ID);
    if (appId === undefined) throw new TesseraError('invalid_request', 'The X-Kii-AppID header is required.');
    const app = await apps.require(appId);
    const authorization = parseAuthorization(singleHeader(request.raw, 'authorization'));
    const body = tokenRequest(request, false);
    const credentials = clientCredentials(app, authorization, body) ?? throwError(clientAuthenticationRequired());
    return tokenResponse(
      await issuer.issue(
        app,
        { credentials, expiresAt: body.expiresAt, scope: body.scope, attestation: singleHeader(request.raw, ATTESTATION_HEADER) },
        anonymousRequest(request.ip, request.headers.origin),
      ),
    );
  });

  refuseOtherMethods(app, APP_TOKEN_PATH, ['POST'], { method: 'GET', schema: tokenEndpointOtherMethods, preflight: preflightToken });
  refuseOtherMethods(app, SDK_TOKEN_PATH, ['POST'], { method: 'GET', schema: sdkTokenEndpointOtherMethods, preflight: preflightSdkToken });
};

/** The seed's four fields; a token with scopes adds `scope` (RFC 6749 §5.1). */
function tokenResponse({ id, accessToken, expiresIn, scopes }: IssuedToken) {
  if (scopes === null) return { id, access_token: accessToken, expires_in: expiresIn, token_type: 'bearer' as const };
  return { id, access_token: accessToken, expires_in: expiresIn, token_type: 'bearer' as const, scope: scopeParameter(scopes) };
}

/**
 * The request's fields, once its schema has checked them (`token-endpoint.schema.ts`), as the
 * contract reads them (`parseTokenRequest`). A form's `expiresAt` is its decimal string, as a number.
 */
function tokenRequest(request: FastifyRequest, grantTypeRequired: boolean): TokenRequest {
  if (request.validationError) throw request.validationError;
  const body = request.body as Record<string, unknown> | undefined;
  // Only a form's can be a string here: a JSON body's that is one was refused by the schema.
  if (typeof body?.expiresAt === 'string') body.expiresAt = body.expiresAt === '' ? undefined : Number(body.expiresAt);
  return parseTokenRequest(body, { grantTypeRequired });
}

function throwError(error: Error): never {
  throw error;
}
