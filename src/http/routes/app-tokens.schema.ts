import { Type } from 'typebox';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import {
  answer,
  APP_NOT_FOUND,
  AppParams,
  problem,
  Ref,
  RevokedTokens,
  UNAUTHENTICATED,
  UNAVAILABLE,
  adminFeature,
  NO_STORE,
} from '../schemas.js';

/**
 * Revoking every token of an app: the schema of each route of `app-tokens.ts`, from which Fastify
 * validates its requests, serializes its answers and types its handlers, and from which
 * docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and answered by
 * `../errors.ts`.
 */

/** DELETE /api/apps/{appId}/tokens */
export const revokeAllTokens = {
  tags: ['tokens'],
  operationId: 'revokeAllTokens',
  summary: "Revoke all of the app's tokens, or all of one kind (admin feature)",
  description:
    'Takes effect on every instance within a second. `admin` and `all` include the token the request is made with. `kind` is the only query parameter and is required, spelled out; the request has no body (an empty one, labelled with any type, is accepted). The revocation and its `token.revoked` event are written in one transaction: if the event cannot be written, nothing is revoked (`500`).',
  security: [{ bearer: [] }],
  params: AppParams,
  querystring: Type.Object(
    {
      kind: Type.Unsafe<'admin' | 'anonymous' | 'all'>({
        description:
          'Which tokens: `admin`, `anonymous`, or `all` of them. Required, exactly as spelled here: absent, empty, in another case, repeated, or sent under another name (`KIND`, `kind[]`) it is `400 invalid_request`, and nothing is revoked, so that no typo or unset variable ever revokes everything.',
        type: 'string',
        enum: ['admin', 'anonymous', 'all'],
      }),
    },
    { additionalProperties: false },
  ),
  response: {
    200: answer(Ref(RevokedTokens), 'Revoked: `message` says what happened in words.', NO_STORE),
  },
  errors: {
    400: problem(
      '`kind` is absent, not exactly `admin`, `anonymous` or `all`, or repeated; another query parameter is sent; or the request has a body. Nothing is revoked. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('tokens:revoke'),
    404: APP_NOT_FOUND,
    503: UNAVAILABLE,
  },
};

/** GET /api/apps/{appId}/tokens */
export const appTokensOtherMethods = otherMethodsSchema(
  'tokens',
  'appTokensOtherMethods',
  'DELETE',
  'GET, POST and every other method but DELETE answer 405 with `Allow: DELETE`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/tokens */
export const preflightTokens = preflightSchema({ operationId: 'preflightTokens' });
