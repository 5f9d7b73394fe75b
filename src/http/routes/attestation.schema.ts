import { Type } from 'typebox';
import { POW_ALGORITHMS } from 'tessera-tokens/internal/apps/app.js';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import { adminFeature, answer, APP_NOT_FOUND, AppId, AppParams, NO_STORE, problem, UNAUTHENTICATED, UNAVAILABLE } from '../schemas.js';

/**
 * Attestation of anonymous token requests: the proof of work's challenge, and an app's debug tokens.
 * The schema of each route of `attestation.ts` (validation, serialization, docs/openapi.json).
 */

const PowChallenge = Type.Object(
  {
    parameters: Type.Object(
      {
        algorithm: Type.Unsafe<(typeof POW_ALGORITHMS)[number]>({ type: 'string', enum: [...POW_ALGORITHMS] }),
        cost: Type.Integer({ description: "ALTCHA's cost of one attempt: rounds of the hash, or PBKDF2's iterations." }),
        data: Type.Object(
          {
            app: Type.String({ description: 'The AppID the challenge is for.' }),
            kid: Type.Integer({ description: 'The signing key.' }),
            serial: Type.Optional(
              Type.Integer({
                minimum: 0,
                description:
                  'What a proof of the challenge is claimed by, so that it is accepted once; absent until the store is finalized for 0.4.0 (a proof is then claimed by the signature).',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        expiresAt: Type.Integer({ description: 'UNIX seconds: five minutes after it was made.' }),
        keyLength: Type.Integer(),
        keyPrefix: Type.String({ description: 'Hex: the first 16 bytes of the key to find.' }),
        keySignature: Type.String(),
        nonce: Type.String(),
        salt: Type.String(),
      },
      { additionalProperties: false },
    ),
    signature: Type.String({ description: 'HMAC-SHA256 of the parameters, in hex.' }),
  },
  { additionalProperties: false },
);

/** GET /api/apps/{appId}/attestation/challenge */
export const attestationChallenge = {
  tags: ['tokens'],
  operationId: 'attestationChallenge',
  summary: 'A proof-of-work challenge for an anonymous token request',
  description:
    "An ALTCHA challenge (v2: `{parameters, signature}`, in deterministic mode), signed by this service for this app, with its expiry inside what is signed; the ALTCHA widget and altcha-lib 2 solve it, and `tessera-tokens/client` does so by itself. Send the solution with the anonymous token request as `X-Tessera-Attestation: pow.<base64 of {challenge, solution}>` (what the widget submits): accepted once, for this app, within five minutes. Its algorithm and cost are the app's (`powAlgorithm`, `powCost`); it needs from half of `powMaxAttempts` to all of them, multiplied while the app's anonymous token requests are above `powRisesAbovePerMinute`. Needs no credentials (a client asks for one before it has a token): any `Authorization` header is ignored. Counted against the address's token requests.",
  params: AppParams,
  response: {
    200: answer(PowChallenge, 'A challenge.', NO_STORE),
  },
  errors: {
    404: APP_NOT_FOUND,
    429: problem('Too many token requests from this address. Possible codes: TOO_MANY_REQUESTS.', {
      'Retry-After': { description: 'Seconds to wait before trying again.', type: 'integer' },
    }),
    503: UNAVAILABLE,
  },
};

export const attestationChallengeOtherMethods = otherMethodsSchema(
  'tokens',
  'attestationChallengeOtherMethods',
  'GET, HEAD',
  'POST and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`.',
  'Any method but GET and HEAD. Possible codes: METHOD_NOT_ALLOWED.',
);

export const preflightAttestationChallenge = preflightSchema({ operationId: 'preflightAttestationChallenge' });

const DebugToken = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    createdAt: Type.String({ format: 'date-time' }),
    lastUsedAt: Type.Unsafe<string | null>({
      type: ['string', 'null'],
      format: 'date-time',
      description: 'Written at most once a minute.',
    }),
  },
  { additionalProperties: false },
);

const CreatedDebugToken = Type.Object(
  {
    ...DebugToken.properties,
    token: Type.String({
      description: 'The debug token (`tdbg_` and 43 characters): in this answer only. Send it as `X-Tessera-Attestation: debug.<token>`.',
    }),
  },
  { additionalProperties: false },
);

const DebugTokenParams = Type.Object({ appId: AppId, debugTokenId: Type.String({ maxLength: 64 }) });

const DEBUG_TOKENS_ARE =
  "An admin feature: an admin token of the app's own ClientID, or one with `configuration:write` (`configuration:read` to list). Debug tokens attest anonymous token requests from CI and emulators (`X-Tessera-Attestation: debug.<token>`): used again and again until revoked, unlike every other attestation. The operator manages them with `tessera attestation debug-token`, the app's developers in the portal.";

/** GET /api/apps/{appId}/attestation/debug-tokens */
export const listDebugTokens = {
  tags: ['apps'],
  operationId: 'listDebugTokens',
  summary: "The app's attestation debug tokens (admin feature)",
  description: `${DEBUG_TOKENS_ARE} Oldest first; never a token.`,
  security: [{ bearer: [] }],
  params: AppParams,
  response: {
    200: answer(
      Type.Object({ debugTokens: Type.Array(DebugToken, { maxItems: 50 }) }, { additionalProperties: false }),
      'The debug tokens.',
      NO_STORE,
    ),
  },
  errors: { 401: UNAUTHENTICATED, 403: adminFeature('configuration:read'), 404: APP_NOT_FOUND, 503: UNAVAILABLE },
};

/** POST /api/apps/{appId}/attestation/debug-tokens */
export const createDebugToken = {
  tags: ['apps'],
  operationId: 'createDebugToken',
  summary: 'Make an attestation debug token (admin feature)',
  description: `${DEBUG_TOKENS_ARE} An app has at most 50. Recorded as an \`app.configuration_changed\` event (\`debugTokenCreated\`: its name), in the same transaction.`,
  security: [{ bearer: [] }],
  params: AppParams,
  body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
  response: {
    201: answer(CreatedDebugToken, 'Made. The token is in this answer only: it is stored as its SHA-256.', NO_STORE),
  },
  errors: {
    400: problem(
      'Malformed JSON, or a missing, empty or over-long `name`, or one with control characters. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: APP_NOT_FOUND,
    409: problem('The app has 50 debug tokens already: revoke one first. Possible codes: CONFLICT.'),
    413: problem('The body is over 4096 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not `application/json`. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: UNAVAILABLE,
  },
};

export const debugTokensOtherMethods = otherMethodsSchema(
  'apps',
  'debugTokensOtherMethods',
  'GET, HEAD, POST',
  'PUT, PATCH, DELETE and every other method but GET, HEAD and POST answer 405 with `Allow: GET, HEAD, POST`, once the request is authenticated (401 otherwise).',
);

export const preflightDebugTokens = preflightSchema({ operationId: 'preflightDebugTokens' });

/** DELETE /api/apps/{appId}/attestation/debug-tokens/{debugTokenId} */
export const revokeDebugToken = {
  tags: ['apps'],
  operationId: 'revokeDebugToken',
  summary: 'Revoke an attestation debug token (admin feature)',
  description: `${DEBUG_TOKENS_ARE} Deletes it: it attests nothing from the next request on, on every instance (it is read from the store at each use). Recorded as an \`app.configuration_changed\` event (\`debugTokenRevoked\`: its name).`,
  security: [{ bearer: [] }],
  params: DebugTokenParams,
  response: { 200: answer(DebugToken, 'Revoked.', NO_STORE) },
  errors: {
    400: problem('The request has a body (an empty one, labelled with any type, is accepted). Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: problem('No app has this AppID, or the app has no debug token with this id. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

export const debugTokenOtherMethods = otherMethodsSchema(
  'apps',
  'debugTokenOtherMethods',
  'DELETE',
  'GET, POST and every other method but DELETE answer 405 with `Allow: DELETE`, once the request is authenticated (401 otherwise).',
);

export const preflightDebugToken = preflightSchema({ operationId: 'preflightDebugToken' });

const PlayIntegrityDescription = Type.Object(
  {
    packageName: Type.String(),
    decryptionKeyFingerprint: Type.String({
      description: "The first 8 bytes of the key's SHA-256, in hex: the key itself is never answered.",
    }),
    verificationKeyFingerprint: Type.String({ description: "The first 8 bytes of the key's SHA-256, in hex." }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const PLAY_INTEGRITY_IS =
  "An admin feature: an admin token of the app's own ClientID, or one with `configuration:write` (`configuration:read` to read). What the app's Play Integrity tokens (`X-Tessera-Attestation: android.<token>`) are checked against, locally: the package name, and the two keys of the Play Console's \"Decrypt and verify on your server\" (the AES-256 decryption key and the EC verification key, each in base64). A token is accepted when it decrypts and verifies with them, names this package, says `PLAY_RECOGNIZED` and `MEETS_DEVICE_INTEGRITY`, and was asked for within the last five minutes; each once. The operator sets them with `tessera attestation android set`.";

/** GET /api/apps/{appId}/attestation/android */
export const showPlayIntegrity = {
  tags: ['apps'],
  operationId: 'showPlayIntegrity',
  summary: "The app's Play Integrity settings (admin feature)",
  description: `${PLAY_INTEGRITY_IS} Never answers a key: their fingerprints.`,
  security: [{ bearer: [] }],
  params: AppParams,
  response: { 200: answer(PlayIntegrityDescription, 'The settings.', NO_STORE) },
  errors: {
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:read'),
    404: problem('No app has this AppID, or the app has no Play Integrity settings. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

/** PUT /api/apps/{appId}/attestation/android */
export const setPlayIntegrity = {
  tags: ['apps'],
  operationId: 'setPlayIntegrity',
  summary: "Set the app's Play Integrity settings (admin feature)",
  description: `${PLAY_INTEGRITY_IS} Replaces what was set. Recorded as an \`app.configuration_changed\` event (the package name and the verification key's fingerprint, never a key).`,
  security: [{ bearer: [] }],
  params: AppParams,
  body: Type.Object(
    {
      packageName: Type.String({ maxLength: 255, description: 'The Android package name, such as `com.example.app`.' }),
      decryptionKey: Type.String({ maxLength: 200, description: 'The AES-256 key of the Play Console, base64 (32 bytes).' }),
      verificationKey: Type.String({
        maxLength: 1000,
        description: 'The EC P-256 public key of the Play Console, base64 (DER SubjectPublicKeyInfo).',
      }),
    },
    { additionalProperties: false },
  ),
  response: { 200: answer(PlayIntegrityDescription, 'Set.', NO_STORE) },
  errors: {
    400: problem(
      'Malformed JSON, a missing field, a package name that is not one, or a key that is not what the Play Console gives. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: APP_NOT_FOUND,
    413: problem('The body is over 4096 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not `application/json`. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: UNAVAILABLE,
  },
};

/** DELETE /api/apps/{appId}/attestation/android */
export const removePlayIntegrity = {
  tags: ['apps'],
  operationId: 'removePlayIntegrity',
  summary: "Remove the app's Play Integrity settings (admin feature)",
  description: `${PLAY_INTEGRITY_IS} Without them, every \`android\` attestation is refused as not set up. Answers 204.`,
  security: [{ bearer: [] }],
  params: AppParams,
  response: { 204: { description: 'Removed.', type: 'null' } },
  errors: {
    400: problem('The request has a body (an empty one, labelled with any type, is accepted). Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: problem('No app has this AppID, or the app has no Play Integrity settings. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

export const playIntegrityOtherMethods = otherMethodsSchema(
  'apps',
  'playIntegrityOtherMethods',
  'GET, HEAD, PUT, DELETE',
  'POST, PATCH and every other method but GET, HEAD, PUT and DELETE answer 405 with `Allow: GET, HEAD, PUT, DELETE`, once the request is authenticated (401 otherwise).',
);

export const preflightPlayIntegrity = preflightSchema({ operationId: 'preflightPlayIntegrity' });

const AppAttestDescription = Type.Object(
  {
    teamId: Type.String(),
    bundleId: Type.String(),
    environment: Type.Unsafe<'production' | 'development'>({ type: 'string', enum: ['production', 'development'] }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const APP_ATTEST_IS =
  "An admin feature: an admin token of the app's own ClientID, or one with `configuration:write` (`configuration:read` to read). What the app's App Attest keys and assertions (`X-Tessera-Attestation: apple.<attestation|assertion>.<keyId>.<challenge>.<object>`) are checked against, locally: the Team ID and bundle id (`TEAMID.bundle.id` is the App ID the attestation must name) and the environment its builds attest in (`production`, or `development` for builds run from Xcode). The operator sets them with `tessera attestation apple set`.";

/** GET /api/apps/{appId}/attestation/apple */
export const showAppAttest = {
  tags: ['apps'],
  operationId: 'showAppAttest',
  summary: "The app's App Attest settings (admin feature)",
  description: APP_ATTEST_IS,
  security: [{ bearer: [] }],
  params: AppParams,
  response: { 200: answer(AppAttestDescription, 'The settings.', NO_STORE) },
  errors: {
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:read'),
    404: problem('No app has this AppID, or the app has no App Attest settings. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

/** PUT /api/apps/{appId}/attestation/apple */
export const setAppAttest = {
  tags: ['apps'],
  operationId: 'setAppAttest',
  summary: "Set the app's App Attest settings (admin feature)",
  description: `${APP_ATTEST_IS} Replaces what was set. Recorded as an \`app.configuration_changed\` event.`,
  security: [{ bearer: [] }],
  params: AppParams,
  body: Type.Object(
    {
      teamId: Type.String({ maxLength: 10, description: 'The 10-character Apple Developer Team ID.' }),
      bundleId: Type.String({ maxLength: 255, description: 'The bundle identifier, such as `com.example.app`.' }),
      environment: Type.Optional(
        Type.Unsafe<'production' | 'development'>({
          type: 'string',
          enum: ['production', 'development'],
          description: 'Default production.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  response: { 200: answer(AppAttestDescription, 'Set.', NO_STORE) },
  errors: {
    400: problem(
      'Malformed JSON, a missing field, or a Team ID, bundle id or environment that is not one. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: APP_NOT_FOUND,
    413: problem('The body is over 4096 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not `application/json`. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: UNAVAILABLE,
  },
};

/** DELETE /api/apps/{appId}/attestation/apple */
export const removeAppAttest = {
  tags: ['apps'],
  operationId: 'removeAppAttest',
  summary: "Remove the app's App Attest settings (admin feature)",
  description: `${APP_ATTEST_IS} Without them, every \`apple\` attestation is refused as not set up (the keys attested stay, for when they are set again). Answers 204.`,
  security: [{ bearer: [] }],
  params: AppParams,
  response: { 204: { description: 'Removed.', type: 'null' } },
  errors: {
    400: problem('The request has a body (an empty one, labelled with any type, is accepted). Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: problem('No app has this AppID, or the app has no App Attest settings. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

export const appAttestOtherMethods = otherMethodsSchema(
  'apps',
  'appAttestOtherMethods',
  'GET, HEAD, PUT, DELETE',
  'POST, PATCH and every other method but GET, HEAD, PUT and DELETE answer 405 with `Allow: GET, HEAD, PUT, DELETE`, once the request is authenticated (401 otherwise).',
);

export const preflightAppAttest = preflightSchema({ operationId: 'preflightAppAttest' });
