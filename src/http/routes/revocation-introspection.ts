import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { checkAdminScope } from '../../app-access.js';
import { scopeParameter } from 'tessera-tokens/internal/credentials/scopes.js';
import { adminRequired } from 'tessera-tokens/internal/error-catalogue.js';
import type { Metrics } from '../../metrics/port.js';
import type { RateLimits } from '../../limits/rate-limits.js';
import type { Principal } from 'tessera-tokens/internal/principal.js';
import type { TokenChecker } from 'tessera-tokens/internal/tokens/checker.js';
import type { EndpointCallers } from '../../auth/endpoint-callers.js';
import { parseBodyCredentials, parseTokenParameter } from '../../tokens/request.js';
import type { TokenRevoker } from '../../tokens/revocation.js';
import { acceptFormFields } from '../content-types.js';
import { preventCaching, singleHeader } from 'tessera-tokens/internal/http/headers.js';
import { INTROSPECT_PATH, REVOKE_PATH } from '../paths.js';
import { introspectToken, revokeToken, TOKEN_PARAMETER_FIELDS } from './revocation-introspection.schema.js';

/** What revocation and introspection use. */
export interface EndpointRoutesOptions {
  apps: AppCache;
  callers: EndpointCallers;
  checker: TokenChecker;
  revoker: TokenRevoker;
  limits: RateLimits;
  metrics: Pick<Metrics, 'introspected'>;
}

/**
 * Revocation (RFC 7009) and introspection (RFC 7662). They authenticate their caller themselves,
 * after the body is read, since an OAuth client may send its credentials there (`client_secret_post`);
 * their other methods are answered with the rest of the app's paths (`app-tokens.ts`). The schema's
 * refusal of a body is answered where the token is read, after the caller's authentication
 * (`tokenParameter`), as it always was.
 */
export const endpointRoutes: FastifyPluginAsyncTypebox<EndpointRoutesOptions> = async (
  app,
  { apps, callers, checker, revoker, limits, metrics },
) => {
  acceptFormFields(app, TOKEN_PARAMETER_FIELDS);
  preventCaching(app);

  const callerOf = (target: AppRecord, request: FastifyRequest): Promise<Principal> =>
    callers.callerOf(target, {
      authorization: singleHeader(request.raw, 'authorization'),
      rawHeaders: request.raw.rawHeaders,
      path: request.url,
      clientAddress: request.ip,
      origin: request.headers.origin,
      body: parseBodyCredentials(request.body),
    });

  app.post(REVOKE_PATH, { schema: revokeToken, attachValidation: true }, async (request) => {
    // Anyone holding an anonymous token may revoke it, and each revocation is kept until the token
    // expires: revocations share the token endpoint's limit per client address.
    await limits.checkTokenRequest(request.ip);
    const target = await apps.require(request.params.appId);
    const caller = await callerOf(target, request);
    const token = tokenParameter(request);
    await revoker.revoke(target, token, { clientAddress: request.ip, by: caller });
    // RFC 7009 §2.2: 200, also for a token that was unknown or already revoked. An empty JSON object
    // rather than no body: client libraries parse the answer as JSON.
    return {};
  });

  app.post(INTROSPECT_PATH, { schema: introspectToken, attachValidation: true }, async (request) => {
    const target = await apps.require(request.params.appId);
    const caller = await callerOf(target, request);
    if (caller.kind !== 'admin') throw adminRequired();
    checkAdminScope(caller, 'introspect_tokens');
    const token = tokenParameter(request);
    const active = await checker.introspect(target, token);
    metrics.introspected(active !== undefined);
    if (active === undefined) return { active: false };
    return {
      active: true,
      token_type: 'bearer' as const,
      principal: active.kind,
      id: active.id,
      sub: active.id,
      client_id: active.clientId,
      app_id: active.appId,
      iat: Math.floor(active.issuedAt / 1000),
      ...(active.expiresAt === null ? {} : { exp: Math.floor(active.expiresAt / 1000) }),
      ...(active.scopes === null ? {} : { scope: scopeParameter(active.scopes) }),
      ...(active.attestation === undefined ? {} : { attestation: active.attestation }),
    };
  });
};

/** The request's `token`, once its schema has checked the body (`revocation-introspection.schema.ts`). */
function tokenParameter(request: FastifyRequest): string {
  if (request.validationError) throw request.validationError;
  return parseTokenParameter(request.body);
}
