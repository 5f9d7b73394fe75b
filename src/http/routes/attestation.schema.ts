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
          { app: Type.String({ description: 'The AppID the challenge is for.' }), kid: Type.Integer({ description: 'The signing key.' }) },
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
