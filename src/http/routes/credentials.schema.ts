import { Type } from 'typebox';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import {
  answer,
  APP_NOT_FOUND,
  AppId,
  AppParams,
  CreatedCredential,
  Credential,
  NewCredential,
  problem,
  Ref,
  RevokedCredential,
  RotatedCredential,
  UNAUTHENTICATED,
  UNAVAILABLE,
  adminFeature,
  INSUFFICIENT_SCOPE_CHALLENGE,
  NO_STORE,
} from '../schemas.js';

/**
 * An app's credentials: the schema of each route of `credentials.ts`, from which Fastify validates
 * its requests, serializes its answers and types its handlers, and from which docs/openapi.json is
 * generated (`../openapi.ts`). Its errors are documented here and answered by `../errors.ts`.
 */

/** The path of one credential. */
const CredentialParams = Type.Object({
  appId: AppId,
  clientId: Type.String({
    description:
      "The credential's ClientID (`tcl_` and 24 hex characters). Any other value, the app's own ClientID included, is 404 NOT_FOUND.",
  }),
});

/** GET /api/apps/{appId}/credentials */
export const listCredentials = {
  tags: ['apps'],
  operationId: 'listCredentials',
  summary: "The app's credentials (admin feature)",
  description:
    "An admin feature: an admin token of the app's own ClientID, or one with `credentials:manage`. The operator manages them with `tessera credentials`, the app's developers in the portal. Oldest first; never a secret. Not the app's own ClientID, which is no credential.",
  security: [{ bearer: [] }],
  params: AppParams,
  response: {
    200: answer(
      Type.Object({ credentials: Type.Array(Ref(Credential), { maxItems: 50 }) }, { additionalProperties: false }),
      'The credentials.',
      NO_STORE,
    ),
  },
  errors: {
    401: UNAUTHENTICATED,
    403: adminFeature('credentials:manage'),
    404: APP_NOT_FOUND,
    503: UNAVAILABLE,
  },
};

/** POST /api/apps/{appId}/credentials */
export const createCredential = {
  tags: ['apps'],
  operationId: 'createCredential',
  summary: 'Create a credential (admin feature)',
  description:
    "An admin feature: an admin token of the app's own ClientID, or one with `credentials:manage`. The operator manages them with `tessera credentials`, the app's developers in the portal. A new ClientID and ClientSecret whose admin tokens may do only what `scopes` name, until `expiresAt`, from the addresses of `allowFrom`. An app has at most 50. Recorded as a `credential.created` event, in the same transaction. An admin token issued from a credential makes only credentials at most as limited as its own: `expiresAt` no later than that credential's and `allowFrom` within its list; left out, they are that credential's (FORBIDDEN otherwise, its message starting with the field's name).",
  security: [{ bearer: [] }],
  params: AppParams,
  body: Ref(NewCredential),
  response: {
    201: answer(Ref(CreatedCredential), 'Created. The ClientSecret is in this answer only: it is stored as its HMAC-SHA256.', NO_STORE),
  },
  errors: {
    400: problem(
      "Malformed JSON, a body that is not an object, or a field that is missing, of the wrong type or out of range: the message starts with the field's name (`name`, `scopes`, `expiresAt`, `allowFrom`). Possible codes: invalid_request.",
    ),
    401: UNAUTHENTICATED,
    403: problem(
      "Not an admin token (ADMIN_REQUIRED); an admin token with scopes that do not include `credentials:manage`, or that asks for a scope it does not have itself (INSUFFICIENT_SCOPE, naming the first one missing). An admin token issued from a credential asking for a later `expiresAt` or wider `allowFrom` than that credential's (FORBIDDEN). Possible codes: ADMIN_REQUIRED, INSUFFICIENT_SCOPE, FORBIDDEN.",
      INSUFFICIENT_SCOPE_CHALLENGE,
    ),
    404: APP_NOT_FOUND,
    409: problem(
      'The app has 50 credentials already: revoke one first; or, during a rolling upgrade, an instance of a release that would take a credential\'s tokens for full admin tokens may still serve on the store: credentials wait until it is finalized for this release (docs/deployment.md, "Upgrading"). Possible codes: CONFLICT.',
    ),
    413: problem('The body is over 8192 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not `application/json`. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: UNAVAILABLE,
  },
};

/** PUT /api/apps/{appId}/credentials */
export const credentialsOtherMethods = otherMethodsSchema(
  'apps',
  'credentialsOtherMethods',
  'GET, HEAD, POST',
  'PUT, PATCH, DELETE and every other method but GET, HEAD and POST answer 405 with `Allow: GET, HEAD, POST`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/credentials */
export const preflightCredentials = preflightSchema({ operationId: 'preflightCredentials' });

/** DELETE /api/apps/{appId}/credentials/{clientId} */
export const revokeCredential = {
  tags: ['apps'],
  operationId: 'revokeCredential',
  summary: 'Revoke a credential (admin feature)',
  description:
    "An admin feature: an admin token of the app's own ClientID, or one with `credentials:manage`. The operator manages them with `tessera credentials`, the app's developers in the portal. Deletes the credential, every credential its admin tokens made (and theirs, in turn), and every admin token issued from any of them: their ClientSecrets and tokens are refused at once, a token request racing the revocation included, and by every instance's cache within a second. The request has no body. Recorded as a `credential.revoked` event for each credential revoked, in the same transaction.",
  security: [{ bearer: [] }],
  params: CredentialParams,
  response: {
    200: answer(Ref(RevokedCredential), 'Revoked.', NO_STORE),
  },
  errors: {
    400: problem('The request has a body (an empty one, labelled with any type, is accepted). Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: adminFeature('credentials:manage'),
    404: problem('No app has this AppID, or the app has no credential with this ClientID. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

/** GET /api/apps/{appId}/credentials/{clientId} */
export const credentialOtherMethods = otherMethodsSchema(
  'apps',
  'credentialOtherMethods',
  'DELETE',
  'GET, POST and every other method but DELETE answer 405 with `Allow: DELETE`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/credentials/{clientId} */
export const preflightCredential = preflightSchema({ operationId: 'preflightCredential' });

/** POST /api/apps/{appId}/credentials/{clientId}/rotate */
export const rotateCredentialSecret = {
  tags: ['apps'],
  operationId: 'rotateCredentialSecret',
  summary: 'Give a credential a new ClientSecret (admin feature)',
  description:
    "An admin feature: an admin token of the app's own ClientID, or one with `credentials:manage`. The operator manages them with `tessera credentials`, the app's developers in the portal. The old ClientSecret stops working at once, or, with `graceSeconds`, at the end of that period (one previous secret is kept: a rotation ends the one before). Tokens already issued keep working. Rotating hands over what the credential can do, so an admin token with scopes must have all of the credential's, and one issued from a credential may rotate only a credential at most as limited as that one (expiry and addresses). Recorded as a `credential.rotated` event, in the same transaction.",
  security: [{ bearer: [] }],
  params: CredentialParams,
  // No body, or null, is `{}`: the old ClientSecret stops at once.
  body: Type.Unsafe<{ graceSeconds?: number | null } | null>({
    type: ['object', 'null'],
    additionalProperties: true,
    properties: {
      graceSeconds: {
        type: ['integer', 'null'],
        minimum: 1,
        maximum: 2592000,
        description: 'How long the old ClientSecret keeps working, in seconds (1 to 30 days). Absent or null: it stops at once.',
      },
    },
  }),
  'x-body-required': false,
  response: {
    200: answer(Ref(RotatedCredential), 'The new ClientSecret, shown this once.', NO_STORE),
  },
  errors: {
    400: problem(
      'Malformed JSON, a body that is not an object, or `graceSeconds` that is not a whole number from 1 to 2592000. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: problem(
      "Not an admin token (ADMIN_REQUIRED); an admin token with scopes that do not include `credentials:manage`, or lack one of the credential's (INSUFFICIENT_SCOPE). An admin token issued from a credential rotating one that expires later or may be used from more addresses (FORBIDDEN). Possible codes: ADMIN_REQUIRED, INSUFFICIENT_SCOPE, FORBIDDEN.",
      INSUFFICIENT_SCOPE_CHALLENGE,
    ),
    404: problem('No app has this AppID, or the app has no credential with this ClientID. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    409: problem(
      'A grace period was asked for during a rolling upgrade, while an instance of a release that would refuse the previous secret at once may still serve on the store: rotate without one, or once the store is finalized for this release (docs/deployment.md, "Upgrading"). Possible codes: CONFLICT.',
    ),
    413: problem('The body is over 8192 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not `application/json`. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: UNAVAILABLE,
  },
};

/** GET /api/apps/{appId}/credentials/{clientId}/rotate */
export const credentialRotationOtherMethods = otherMethodsSchema(
  'apps',
  'credentialRotationOtherMethods',
  'POST',
  'GET, PUT, DELETE and every other method but POST answer 405 with `Allow: POST`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/credentials/{clientId}/rotate */
export const preflightCredentialRotation = preflightSchema({ operationId: 'preflightCredentialRotation' });

/** DELETE /api/apps/{appId}/credentials/{clientId}/previous-secret */
export const endCredentialPreviousSecret = {
  tags: ['apps'],
  operationId: 'endCredentialPreviousSecret',
  summary: "End a credential's previous secret now (admin feature)",
  description:
    "An admin feature: an admin token of the app's own ClientID, or one with `credentials:manage`. The operator does it with `tessera credentials end-previous-secret`, the app's developers in the portal (the credential's rotate page). Ends the grace period of the credential's last rotation: the secret it replaced is refused from now on, a token request racing this included; the current secret stays. Admin tokens issued with the previous secret keep working until they expire (revoke the credential to end them too). The request has no body. Recorded as a `credential.previous_secret_ended` event when a previous secret was working.",
  security: [{ bearer: [] }],
  params: CredentialParams,
  response: {
    200: answer(
      Type.Object(
        {
          clientId: Type.String({ pattern: '^tcl_[0-9a-f]{24}$' }),
          endedPreviousSecretValidUntil: Type.Unsafe<string | null>({
            type: ['string', 'null'],
            format: 'date-time',
            description: 'Until when the previous secret would have worked; null: no previous secret was working, and nothing changed.',
          }),
        },
        { additionalProperties: false },
      ),
      'Ended, or nothing to end.',
      NO_STORE,
    ),
  },
  errors: {
    400: problem('The request has a body (an empty one, labelled with any type, is accepted). Possible codes: invalid_request.'),
    401: UNAUTHENTICATED,
    403: adminFeature('credentials:manage'),
    404: problem('No app has this AppID, or the app has no credential with this ClientID. Possible codes: APP_NOT_FOUND, NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};
