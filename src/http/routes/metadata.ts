import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { authorizationServerMetadata, issuerOf } from '../../tokens/metadata.js';
import { refuseOtherMethods, routeEveryMethod } from '../methods.js';
import { APP_PATH, METADATA_PREFIX } from '../paths.js';
import { publicBaseUrl } from '../public-url.js';
import {
  authorizationServerMetadata as metadataSchema,
  authorizationServerMetadataOtherMethods,
  openidConfiguration,
} from './metadata.schema.js';

export interface MetadataRoutesOptions {
  apps: AppCache;
  /** PUBLIC_URL, without a trailing slash; undefined when it is not configured. */
  publicUrl: string | undefined;
}

/**
 * Each app's Authorization Server Metadata (RFC 8414), public like the AppID. With a `PUBLIC_URL` that
 * has a path, its well-known URL has that path too (`/.well-known/oauth-authorization-server/prefix/api/apps/…`),
 * and is served as well as the plain one, whichever of the two a proxy passes on.
 */
export const metadataRoutes: FastifyPluginAsyncTypebox<MetadataRoutesOptions> = async (app, { apps, publicUrl }) => {
  const prefix = publicUrl === undefined ? '' : new URL(publicUrl).pathname.replace(/\/+$/, '');
  const paths = [...new Set([`${METADATA_PREFIX}${APP_PATH}`, `${METADATA_PREFIX}${prefix}${APP_PATH}`])];
  for (const [i, path] of paths.entries()) {
    // The plain path is the document's; the one with PUBLIC_URL's path (when there is one) serves the same.
    const documented = i === 0;
    const schema = documented ? metadataSchema : { ...metadataSchema, operationId: undefined };
    app.get(path, { schema }, async (request) => {
      const target = await apps.require(request.params.appId);
      const base = publicBaseUrl(publicUrl, app.server);
      if (base === undefined) {
        throw new TesseraError(
          'NOT_FOUND',
          'No metadata: the service does not know the URL its clients reach it at. Its operator sets PUBLIC_URL.',
        );
      }
      return authorizationServerMetadata(issuerOf(base, target.appId));
    });
    refuseOtherMethods(app, path, ['GET'], documented ? { method: 'POST', schema: authorizationServerMetadataOtherMethods } : undefined);
  }

  // openid-client looks here by default; this service is no OpenID provider, so say where to look.
  routeEveryMethod(
    app,
    `${APP_PATH}/.well-known/openid-configuration`,
    async () => {
      throw new TesseraError(
        'NOT_FOUND',
        'This service is no OpenID provider. Its OAuth 2.0 metadata (RFC 8414) is at ' +
          `${METADATA_PREFIX}/api/apps/{appId} (in openid-client: discovery with algorithm "oauth2").`,
      );
    },
    { GET: openidConfiguration },
  );
};
