import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { describeAppRevocation, type TokenRevoker } from '../../tokens/revocation.js';
import { acceptFormBodies, refuseBodies } from '../content-types.js';
import { preventCaching } from 'tessera-tokens/internal/http/headers.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { APP_TOKENS_PATH, INTROSPECT_PATH, REVOKE_PATH } from '../paths.js';
import { appTokensOtherMethods, preflightTokens, revokeAllTokens } from './app-tokens.schema.js';
import { introspectOtherMethods, preflightIntrospect, preflightRevoke, revokeOtherMethods } from './revocation-introspection.schema.js';

/** What the lifecycle routes use. */
export interface TokenLifecycleRoutesOptions {
  revoker: TokenRevoker;
}

/**
 * Revoking all tokens of an app, and the other methods of revocation and introspection (whose
 * `POST` authenticates its client itself: `revocation-introspection.ts`). Needs `tesseraAuth` registered in
 * the same scope, so that a wrong method is answered after authentication, as everywhere under an app.
 */
export const tokenLifecycleRoutes: FastifyPluginAsyncTypebox<TokenLifecycleRoutesOptions> = async (app, { revoker }) => {
  acceptFormBodies(app);
  preventCaching(app);

  // Its own scope: a DELETE carries no body, but clients often label the empty one as JSON.
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    refuseBodies(scope, () => new TesseraError('invalid_request', 'This request takes no body; send kind in the query: ?kind=anonymous.'));
    // `kind` and nothing else, once (the schema): revoking every token of an app is never a default
    // that a typo (`?KIND=`, `?knd=`, `?kind[]=`), a repeated or empty parameter, or an unset variable can fall back to.
    scope.delete(APP_TOKENS_PATH, { schema: revokeAllTokens, onRequest: requireAdmin }, async (request) => {
      const { kind } = request.query;
      const revocation = await revoker.revokeAll(request.params.appId, kind, { clientAddress: request.ip, by: request.principal });
      return describeAppRevocation(request.params.appId, kind, revocation);
    });
  });

  refuseOtherMethods(app, REVOKE_PATH, ['POST'], { method: 'GET', schema: revokeOtherMethods, preflight: preflightRevoke });
  refuseOtherMethods(app, INTROSPECT_PATH, ['POST'], { method: 'GET', schema: introspectOtherMethods, preflight: preflightIntrospect });
  refuseOtherMethods(app, APP_TOKENS_PATH, ['DELETE'], { method: 'GET', schema: appTokensOtherMethods, preflight: preflightTokens });
};
