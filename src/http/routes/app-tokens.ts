import type { FastifyPluginAsync } from 'fastify';
import { revocationKind, type RevocationKind } from '../../apps/revoke-all.js';
import { TesseraError } from '../../errors.js';
import { quoted } from '../../text.js';
import { describeAppRevocation, type TokenRevoker } from '../../tokens/revocation.js';
import { acceptFormBodies, refuseBodies } from '../content-types.js';
import { preventCaching } from '../headers.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from '../middleware/fastify.js';
import { APP_TOKENS_PATH, INTROSPECT_PATH, REVOKE_PATH } from '../paths.js';

type AppParams = { Params: { appId: string } };

/** What the lifecycle routes use. */
export interface TokenLifecycleRoutesOptions {
  revoker: TokenRevoker;
}

/**
 * Revoking all tokens of an app, and the other methods of revocation and introspection (whose
 * `POST` authenticates its client itself: `revocation-introspection.ts`). Needs `tesseraAuth` registered in
 * the same scope, so that a wrong method is answered after authentication, as everywhere under an app.
 */
export const tokenLifecycleRoutes: FastifyPluginAsync<TokenLifecycleRoutesOptions> = async (app, { revoker }) => {
  acceptFormBodies(app);
  preventCaching(app);

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
