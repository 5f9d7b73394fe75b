import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { scopeParameter } from 'tessera-tokens/internal/credentials/scopes.js';
import { notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { ignoreBodies } from '../content-types.js';
import { refuseOtherMethods, routeEveryMethod } from '../methods.js';
import { UNDER_APP_PATH, WHOAMI_PATH } from '../paths.js';
import { otherAppPaths, preflightOtherAppPaths, preflightWhoami, whoami, whoamiOtherMethods } from './whoami.schema.js';

/** Needs `tesseraAuth` registered in the same scope. */
export const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Synchronous: nothing to wait for, so no promise to settle on this hot path.
  app.get(WHOAMI_PATH, { schema: whoami }, (request, reply) => {
    const { appId, kind, id, auth, expiresAt, scopes, clientId, attestation } = request.principal;
    // A token with scopes tells them (and its credential), as the token answer did; an attested one
    // its attestation's provider; any other answers exactly as before.
    if (attestation !== undefined) reply.send({ appId, principal: kind, id, auth, expiresAt, attestation });
    else if (scopes === null) reply.send({ appId, principal: kind, id, auth, expiresAt });
    else reply.send({ appId, principal: kind, id, auth, expiresAt, scope: scopeParameter(scopes), clientId: clientId ?? undefined });
  });
  refuseOtherMethods(app, WHOAMI_PATH, ['GET'], { method: 'POST', schema: whoamiOtherMethods, preflight: preflightWhoami });

  // Everything else under an app is authenticated first (so the /me rule holds on any path), then
  // is not found, whatever its body's type: in a scope of its own that reads no body (deployed SDK
  // clients send types of their own, such as application/vnd.kii.ThingRegistrationRequest+json).
  await app.register(async (scope) => {
    ignoreBodies(scope);
    routeEveryMethod(
      scope,
      UNDER_APP_PATH,
      async () => {
        throw notFound();
      },
      { GET: otherAppPaths, OPTIONS: preflightOtherAppPaths },
    );
  });
};
