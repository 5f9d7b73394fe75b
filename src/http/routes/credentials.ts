import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { CredentialService } from '../../apps/credential-service.js';
import { parseGraceSeconds } from '../../apps/secret-rotation.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { refuseBodies } from '../content-types.js';
import { preventCaching } from 'tessera-tokens/internal/http/headers.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { CREDENTIAL_PATH, CREDENTIAL_PREVIOUS_SECRET_PATH, CREDENTIAL_ROTATION_PATH, CREDENTIALS_PATH } from '../paths.js';
import {
  createCredential,
  credentialOtherMethods,
  credentialRotationOtherMethods,
  credentialsOtherMethods,
  endCredentialPreviousSecret,
  listCredentials,
  preflightCredential,
  preflightCredentialRotation,
  preflightCredentials,
  revokeCredential,
  rotateCredentialSecret,
} from './credentials.schema.js';

/** Name, scopes, expiry and addresses: well under this (32 scopes and 32 CIDRs of at most 64 characters). */
const CREDENTIAL_BODY_LIMIT_BYTES = 8 * 1024;

/**
 * An app's credentials, for its admin with `credentials:manage` (or of the app's own ClientID).
 * Answers with a secret (a new credential, a rotation) are never cached. Needs `tesseraAuth`
 * registered in the same scope.
 */
export const credentialRoutes: FastifyPluginAsyncTypebox<{ credentials: CredentialService }> = async (app, { credentials }) => {
  preventCaching(app);

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    scope.get(CREDENTIALS_PATH, { schema: listCredentials, onRequest: requireAdmin }, async (request) => ({
      credentials: await credentials.list(request.params.appId, { clientAddress: request.ip, by: request.principal }),
    }));

    scope.post(
      CREDENTIALS_PATH,
      { schema: createCredential, onRequest: requireAdmin, bodyLimit: CREDENTIAL_BODY_LIMIT_BYTES },
      async (request, reply) => {
        const created = await credentials.create(request.params.appId, request.body, { clientAddress: request.ip, by: request.principal });
        return reply.code(201).send(created);
      },
    );

    scope.post(
      CREDENTIAL_ROTATION_PATH,
      { schema: rotateCredentialSecret, onRequest: requireAdmin, bodyLimit: CREDENTIAL_BODY_LIMIT_BYTES },
      async (request) => {
        const grace = request.body?.graceSeconds;
        const graceSeconds = typeof grace === 'number' ? parseGraceSeconds(String(grace)) : undefined;
        return credentials.rotate(request.params.appId, request.params.clientId, graceSeconds === undefined ? {} : { graceSeconds }, {
          clientAddress: request.ip,
          by: request.principal,
        });
      },
    );
  });

  // Its own scope: a DELETE carries no body, but clients often label the empty one as JSON.
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    refuseBodies(scope, () => new TesseraError('invalid_request', 'This request takes no body.'));
    scope.delete(CREDENTIAL_PATH, { schema: revokeCredential, onRequest: requireAdmin }, async (request) =>
      credentials.revoke(request.params.appId, request.params.clientId, { clientAddress: request.ip, by: request.principal }),
    );
    scope.delete(CREDENTIAL_PREVIOUS_SECRET_PATH, { schema: endCredentialPreviousSecret, onRequest: requireAdmin }, async (request) =>
      credentials.endPreviousSecret(request.params.appId, request.params.clientId, { clientAddress: request.ip, by: request.principal }),
    );
  });

  refuseOtherMethods(app, CREDENTIALS_PATH, ['GET', 'POST'], {
    method: 'PUT',
    schema: credentialsOtherMethods,
    preflight: preflightCredentials,
  });
  refuseOtherMethods(app, CREDENTIAL_PATH, ['DELETE'], { method: 'GET', schema: credentialOtherMethods, preflight: preflightCredential });
  refuseOtherMethods(app, CREDENTIAL_ROTATION_PATH, ['POST'], {
    method: 'GET',
    schema: credentialRotationOtherMethods,
    preflight: preflightCredentialRotation,
  });
  refuseOtherMethods(app, CREDENTIAL_PREVIOUS_SECRET_PATH, ['DELETE']);
};
