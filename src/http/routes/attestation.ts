import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { preventCaching } from 'tessera-tokens/internal/http/headers.js';
import { requireAdmin } from 'tessera-tokens/internal/http/middleware/fastify.js';
import type { Attestation } from '../../tessera.js';
import type { RateLimits } from '../../limits/rate-limits.js';
import { refuseBodies } from '../content-types.js';
import { refuseOtherMethods } from '../methods.js';
import { parsePlayIntegritySettings } from '../../attestation/android.js';
import { parseAppAttestSettings } from '../../attestation/apple.js';
import { APP_ATTEST_PATH, ATTESTATION_CHALLENGE_PATH, DEBUG_TOKEN_PATH, DEBUG_TOKENS_PATH, PLAY_INTEGRITY_PATH } from '../paths.js';
import {
  appAttestOtherMethods,
  preflightAppAttest,
  removeAppAttest,
  setAppAttest,
  showAppAttest,
  attestationChallenge,
  attestationChallengeOtherMethods,
  createDebugToken,
  debugTokenOtherMethods,
  debugTokensOtherMethods,
  listDebugTokens,
  playIntegrityOtherMethods,
  preflightPlayIntegrity,
  removePlayIntegrity,
  setPlayIntegrity,
  showPlayIntegrity,
  preflightAttestationChallenge,
  preflightDebugToken,
  preflightDebugTokens,
  revokeDebugToken,
} from './attestation.schema.js';

export interface AttestationChallengeOptions {
  apps: AppCache;
  attestation: Attestation;
  limits: RateLimits;
  clock: Clock;
}

/** The proof of work's challenge: needs no credentials, counted as a token request of the address. */
export const attestationChallengeRoute: FastifyPluginAsyncTypebox<AttestationChallengeOptions> = async (
  app,
  { apps, attestation, limits, clock },
) => {
  preventCaching(app);
  app.get(ATTESTATION_CHALLENGE_PATH, { schema: attestationChallenge }, async (request) => {
    await limits.checkTokenRequest(request.ip);
    const found = await apps.require(request.params.appId);
    const now = clock.now();
    return attestation.pow.challenge(found, now, attestation.checker.rate.maxAttempts(found, now));
  });
  refuseOtherMethods(app, ATTESTATION_CHALLENGE_PATH, ['GET'], {
    method: 'POST',
    schema: attestationChallengeOtherMethods,
    preflight: preflightAttestationChallenge,
  });
};

/**
 * An app's debug tokens, Play Integrity and App Attest settings, for its admin (`configuration:write`,
 * `configuration:read` to read). Needs `tesseraAuth` in the same scope.
 */
export const debugTokenRoutes: FastifyPluginAsyncTypebox<{ attestation: Attestation }> = async (app, { attestation }) => {
  preventCaching(app);
  const { debugTokens, playIntegrity, appAttest } = attestation;

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    scope.get(DEBUG_TOKENS_PATH, { schema: listDebugTokens, onRequest: requireAdmin }, async (request) => ({
      debugTokens: await debugTokens.list(request.params.appId, { clientAddress: request.ip, by: request.principal }),
    }));
    scope.get(PLAY_INTEGRITY_PATH, { schema: showPlayIntegrity, onRequest: requireAdmin }, async (request) =>
      playIntegrity.show(request.params.appId, { clientAddress: request.ip, by: request.principal }),
    );
    scope.put(PLAY_INTEGRITY_PATH, { schema: setPlayIntegrity, onRequest: requireAdmin }, async (request) =>
      playIntegrity.set(request.params.appId, parsePlayIntegritySettings(request.body), {
        clientAddress: request.ip,
        by: request.principal,
      }),
    );
    scope.get(APP_ATTEST_PATH, { schema: showAppAttest, onRequest: requireAdmin }, async (request) =>
      appAttest.show(request.params.appId, { clientAddress: request.ip, by: request.principal }),
    );
    scope.put(APP_ATTEST_PATH, { schema: setAppAttest, onRequest: requireAdmin }, async (request) =>
      appAttest.set(request.params.appId, parseAppAttestSettings(request.body), { clientAddress: request.ip, by: request.principal }),
    );
    scope.post(DEBUG_TOKENS_PATH, { schema: createDebugToken, onRequest: requireAdmin }, async (request, reply) => {
      const created = await debugTokens.create(request.params.appId, request.body.name, {
        clientAddress: request.ip,
        by: request.principal,
      });
      return reply.code(201).send(created);
    });
  });

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    refuseBodies(scope, () => new TesseraError('invalid_request', 'This request takes no body.'));
    scope.delete(DEBUG_TOKEN_PATH, { schema: revokeDebugToken, onRequest: requireAdmin }, async (request) =>
      debugTokens.revoke(request.params.appId, request.params.debugTokenId, { clientAddress: request.ip, by: request.principal }),
    );
    scope.delete(APP_ATTEST_PATH, { schema: removeAppAttest, onRequest: requireAdmin }, async (request, reply) => {
      await appAttest.remove(request.params.appId, { clientAddress: request.ip, by: request.principal });
      return reply.code(204).send();
    });
    scope.delete(PLAY_INTEGRITY_PATH, { schema: removePlayIntegrity, onRequest: requireAdmin }, async (request, reply) => {
      await playIntegrity.remove(request.params.appId, { clientAddress: request.ip, by: request.principal });
      return reply.code(204).send();
    });
  });

  refuseOtherMethods(app, DEBUG_TOKENS_PATH, ['GET', 'POST'], {
    method: 'PUT',
    schema: debugTokensOtherMethods,
    preflight: preflightDebugTokens,
  });
  refuseOtherMethods(app, DEBUG_TOKEN_PATH, ['DELETE'], { method: 'GET', schema: debugTokenOtherMethods, preflight: preflightDebugToken });
  refuseOtherMethods(app, APP_ATTEST_PATH, ['GET', 'PUT', 'DELETE'], {
    method: 'POST',
    schema: appAttestOtherMethods,
    preflight: preflightAppAttest,
  });
  refuseOtherMethods(app, PLAY_INTEGRITY_PATH, ['GET', 'PUT', 'DELETE'], {
    method: 'POST',
    schema: playIntegrityOtherMethods,
    preflight: preflightPlayIntegrity,
  });
};
