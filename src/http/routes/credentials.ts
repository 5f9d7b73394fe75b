import type { FastifyPluginAsync } from 'fastify';
import type { CredentialService } from '../../apps/credentials.js';
import { parseGraceSeconds } from '../../apps/secret-rotation.js';
import { TesseraError } from '../../errors.js';
import { refuseBodies } from '../content-types.js';
import { preventCaching } from '../headers.js';
import { refuseOtherMethods } from '../methods.js';
import { requireAdmin } from '../middleware/fastify.js';
import { CREDENTIAL_PATH, CREDENTIAL_PREVIOUS_SECRET_PATH, CREDENTIAL_ROTATION_PATH, CREDENTIALS_PATH } from '../paths.js';

type CredentialsParams = { Params: { appId: string } };
type CredentialParams = { Params: { appId: string; clientId: string } };

/** Name, scopes, expiry and addresses: well under this (32 scopes and 32 CIDRs of at most 64 characters). */
const CREDENTIAL_BODY_LIMIT_BYTES = 8 * 1024;

/**
 * An app's credentials, for its admin with `credentials:manage` (or of the app's own ClientID).
 * Answers with a secret (a new credential, a rotation) are never cached. Needs `tesseraAuth`
 * registered in the same scope.
 */
export const credentialRoutes: FastifyPluginAsync<{ credentials: CredentialService }> = async (app, { credentials }) => {
  preventCaching(app);

  await app.register(async (scope) => {
    scope.get<CredentialsParams>(CREDENTIALS_PATH, { onRequest: requireAdmin }, async (request) => ({
      credentials: await credentials.list(request.params.appId, { clientAddress: request.ip, by: request.principal }),
    }));

    scope.post<CredentialsParams>(
      CREDENTIALS_PATH,
      { onRequest: requireAdmin, bodyLimit: CREDENTIAL_BODY_LIMIT_BYTES },
      async (request, reply) => {
        const created = await credentials.create(request.params.appId, jsonObject(request.body), {
          clientAddress: request.ip,
          by: request.principal,
        });
        return reply.code(201).send(created);
      },
    );

    scope.post<CredentialParams>(
      CREDENTIAL_ROTATION_PATH,
      { onRequest: requireAdmin, bodyLimit: CREDENTIAL_BODY_LIMIT_BYTES },
      async (request) => {
        const body = request.body === undefined || request.body === null ? {} : jsonObject(request.body);
        const grace = body.graceSeconds;
        if (grace !== undefined && grace !== null && typeof grace !== 'number') {
          throw new TesseraError('invalid_request', 'graceSeconds must be a whole number of seconds.');
        }
        const graceSeconds = typeof grace === 'number' ? parseGraceSeconds(String(grace)) : undefined;
        return credentials.rotate(request.params.appId, request.params.clientId, graceSeconds === undefined ? {} : { graceSeconds }, {
          clientAddress: request.ip,
          by: request.principal,
        });
      },
    );
  });

  // Its own scope: a DELETE carries no body, but clients often label the empty one as JSON.
  await app.register(async (scope) => {
    refuseBodies(scope, () => new TesseraError('invalid_request', 'This request takes no body.'));
    scope.delete<CredentialParams>(CREDENTIAL_PATH, { onRequest: requireAdmin }, async (request) =>
      credentials.revoke(request.params.appId, request.params.clientId, { clientAddress: request.ip, by: request.principal }),
    );
    scope.delete<CredentialParams>(CREDENTIAL_PREVIOUS_SECRET_PATH, { onRequest: requireAdmin }, async (request) =>
      credentials.endPreviousSecret(request.params.appId, request.params.clientId, { clientAddress: request.ip, by: request.principal }),
    );
  });

  refuseOtherMethods(app, CREDENTIALS_PATH, ['GET', 'POST']);
  refuseOtherMethods(app, CREDENTIAL_PATH, ['DELETE']);
  refuseOtherMethods(app, CREDENTIAL_ROTATION_PATH, ['POST']);
  refuseOtherMethods(app, CREDENTIAL_PREVIOUS_SECRET_PATH, ['DELETE']);
};

function jsonObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new TesseraError('invalid_request', 'The request body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}
