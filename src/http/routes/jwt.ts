import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { JWKS_MAX_AGE_SECONDS } from '../../jwt/keys.js';
import type { Jwt } from '../../tessera.js';
import { refuseOtherMethods } from '../methods.js';
import { APP_JWKS_PATH, JWKS_PATH, STATUS_LIST_PATH } from '../paths.js';
import { publicBaseUrl } from '../public-url.js';
import { appJwks, appJwksOtherMethods, jwks, jwksOtherMethods, statusList, statusListOtherMethods } from './jwt.schema.js';

export interface JwtRoutesOptions {
  apps: AppCache;
  jwt: Jwt;
  /** PUBLIC_URL, without a trailing slash; undefined when it is not configured. */
  publicUrl: string | undefined;
}

/**
 * What verifiers of JWT access tokens read, public like the AppID and cacheable: the JWKS (the
 * service's, and each app's, which its metadata names as `jwks_uri`) and the Token Status Lists.
 */
export const jwtRoutes: FastifyPluginAsyncTypebox<JwtRoutesOptions> = async (app, { apps, jwt, publicUrl }) => {
  const jwksHeaders = { 'content-type': 'application/jwk-set+json', 'cache-control': `public, max-age=${JWKS_MAX_AGE_SECONDS}` };
  app.get(JWKS_PATH, { schema: jwks }, async (_request, reply) => reply.headers(jwksHeaders).send(await jwt.keys.jwks()));
  refuseOtherMethods(app, JWKS_PATH, ['GET'], { method: 'POST', schema: jwksOtherMethods });

  app.get(APP_JWKS_PATH, { schema: appJwks }, async (request, reply) => {
    await apps.require(request.params.appId);
    return reply.headers(jwksHeaders).send(await jwt.keys.jwks());
  });
  refuseOtherMethods(app, APP_JWKS_PATH, ['GET'], { method: 'POST', schema: appJwksOtherMethods });

  app.get(STATUS_LIST_PATH, { schema: statusList }, async (request, reply) => {
    const base = publicBaseUrl(publicUrl, app.server);
    const token = base === undefined ? undefined : await jwt.statusLists.token(base, Number(request.params.list));
    if (token === undefined) throw new TesseraError('NOT_FOUND', 'No token of this status list can still be valid.');
    return reply
      .headers({ 'content-type': 'application/statuslist+jwt', 'cache-control': `public, max-age=${jwt.statusLists.ttlSeconds}` })
      .send(token);
  });
  refuseOtherMethods(app, STATUS_LIST_PATH, ['GET'], { method: 'POST', schema: statusListOtherMethods });
};
