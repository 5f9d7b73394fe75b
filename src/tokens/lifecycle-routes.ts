import type { FastifyPluginAsync } from 'fastify';
import type { AppCache } from '../apps/cache.js';
import type { RateLimits } from '../limits/rate-limits.js';
import { requireAdmin } from '../auth/middleware/fastify.js';
import { TesseraError } from '../errors.js';
import { acceptFormBodies, refuseBodies } from '../http/content-types.js';
import { preventCaching } from '../http/headers.js';
import { refuseOtherMethods } from '../http/methods.js';
import { quoted } from '../text.js';
import { parseTokenParameter } from './request.js';
import type { TokenChecker } from './checker.js';
import { describeAppRevocation, revocationKind, type RevocationKind, type TokenRevoker } from './revocation.js';

export const REVOKE_PATH = '/api/apps/:appId/oauth2/revoke';
export const INTROSPECT_PATH = '/api/apps/:appId/oauth2/introspect';
export const APP_TOKENS_PATH = '/api/apps/:appId/tokens';

type AppParams = { Params: { appId: string } };

const introspectionSchema = {
  response: {
    200: {
      type: 'object',
      properties: {
        active: { type: 'boolean' },
        token_type: { type: 'string' },
        principal: { type: 'string' },
        id: { type: 'string' },
        sub: { type: 'string' },
        client_id: { type: 'string' },
        app_id: { type: 'string' },
        iat: { type: 'integer' },
        exp: { type: 'integer' },
      },
      required: ['active'],
      additionalProperties: false,
    },
  },
} as const;

/** What the lifecycle routes use. */
export interface TokenLifecycleRoutesOptions {
  apps: AppCache;
  checker: TokenChecker;
  revoker: TokenRevoker;
  limits: RateLimits;
}

/**
 * What happens to tokens after they are issued: revocation (RFC 7009), introspection (RFC 7662)
 * and revoking all tokens of an app. Needs `tesseraAuth` registered in the same scope.
 */
export const tokenLifecycleRoutes: FastifyPluginAsync<TokenLifecycleRoutesOptions> = async (app, { apps, checker, revoker, limits }) => {
  acceptFormBodies(app);
  preventCaching(app);

  app.post<AppParams>(REVOKE_PATH, async (request, reply) => {
    // Anyone holding an anonymous token may revoke it, and each revocation is kept until the token
    // expires: revocations share the token endpoint's limit per client address.
    await limits.checkTokenRequest(request.ip);
    const token = parseTokenParameter(request.body);
    const target = await apps.require(request.params.appId);
    await revoker.revoke(target, token, { clientAddress: request.ip, by: request.principal });
    // RFC 7009 §2.2: 200, also for a token that was unknown or already revoked; the body is not read.
    return reply.code(200).send();
  });

  app.post<AppParams>(INTROSPECT_PATH, { onRequest: requireAdmin, schema: introspectionSchema }, async (request) => {
    const token = parseTokenParameter(request.body);
    const target = await apps.require(request.params.appId);
    const active = await checker.introspect(target, token);
    if (active === undefined) return { active: false };
    return {
      active: true,
      token_type: 'bearer',
      principal: active.kind,
      id: active.id,
      sub: active.id,
      client_id: active.clientId,
      app_id: active.appId,
      iat: Math.floor(active.issuedAt / 1000),
      ...(active.expiresAt === null ? {} : { exp: Math.floor(active.expiresAt / 1000) }),
    };
  });

  // Its own scope: a DELETE carries no body, but clients often label the empty one as JSON.
  await app.register(async (scope) => {
    refuseBodies(scope, () => new TesseraError('invalid_request', 'This request takes no body; send kind in the query: ?kind=anonymous.'));
    scope.delete<AppParams & { Querystring: Record<string, string | string[] | undefined> }>(
      APP_TOKENS_PATH,
      { onRequest: requireAdmin },
      async (request) => {
        const kind = parseRevokeAllQuery(request.query);
        const revocation = await revoker.revokeAll(request.params.appId, kind, { clientAddress: request.ip, by: request.principal });
        return describeAppRevocation(request.params.appId, kind, revocation);
      },
    );
  });

  refuseOtherMethods(app, REVOKE_PATH, ['POST']);
  refuseOtherMethods(app, INTROSPECT_PATH, ['POST']);
  refuseOtherMethods(app, APP_TOKENS_PATH, ['DELETE']);
};

/**
 * `kind` and nothing else, once: revoking every token of an app is never a default that a typo
 * (`?KIND=`, `?knd=`, `?kind[]=`), a repeated or empty parameter, or an unset variable can fall back to.
 */
function parseRevokeAllQuery(query: Record<string, string | string[] | undefined>): RevocationKind {
  const unknown = Object.keys(query).find((name) => name !== 'kind');
  if (unknown !== undefined) {
    throw new TesseraError('invalid_request', `Unknown query parameter ${quoted(unknown)}; the only one is kind.`);
  }
  if (Array.isArray(query.kind)) throw new TesseraError('invalid_request', 'kind must not be repeated.');
  const kind = revocationKind(query.kind);
  if (kind === undefined) throw new TesseraError('invalid_request', 'kind is required, spelled out: "admin", "anonymous" or "all".');
  return kind;
}
