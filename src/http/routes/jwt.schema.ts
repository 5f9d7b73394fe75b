import { Type } from 'typebox';
import { otherMethodsSchema } from '../openapi.js';
import { APP_NOT_FOUND, AppParams, problem, UNAVAILABLE } from '../schemas.js';

/** The JWKS and the Token Status Lists: the schema of each route of `jwt.ts` (validation, serialization, docs/openapi.json). */

const Jwks = Type.Object(
  {
    keys: Type.Array(
      Type.Object(
        {
          kty: Type.String({ description: '`OKP` (Ed25519) or `EC` (P-256).' }),
          crv: Type.String({ description: '`Ed25519` or `P-256`.' }),
          x: Type.String(),
          y: Type.Optional(Type.String({ description: 'For `EC` keys.' })),
          kid: Type.String({ description: "The key's JWK thumbprint (RFC 7638): a token's `kid`." }),
          alg: Type.String({ description: '`EdDSA` or `ES256`.' }),
          use: Type.Literal('sig'),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const JWKS_DESCRIPTION =
  "The public keys that sign JWT access tokens and status lists (RFC 7517): the key that signs, a key rolled ahead (published before it signs, `tessera keys rotate --ahead`), and the keys that signed tokens not yet expired. The same for every app (each app's metadata names it as `jwks_uri`). Public, cacheable for five minutes (`Cache-Control: public, max-age=300`): a verifier reads it again when it meets an unknown `kid`, and finds a rolled key there long before it signs.";

const jwksAnswer = {
  description: 'The published keys.',
  headers: { 'Cache-Control': { type: 'string', const: 'public, max-age=300' } },
  content: { 'application/jwk-set+json': { schema: Jwks }, 'application/json': { schema: Jwks } },
};

/** GET /api/apps/{appId}/jwks.json */
export const appJwks = {
  tags: ['tokens'],
  operationId: 'appJwks',
  summary: "The keys of the app's JWT access tokens (JWKS)",
  description: JWKS_DESCRIPTION,
  params: AppParams,
  response: { 200: jwksAnswer },
  errors: { 404: APP_NOT_FOUND, 503: UNAVAILABLE },
};

/** GET /api/jwks.json */
export const jwks = {
  tags: ['tokens'],
  operationId: 'jwks',
  summary: 'The keys of JWT access tokens (JWKS)',
  description: JWKS_DESCRIPTION,
  response: { 200: jwksAnswer },
  errors: { 503: UNAVAILABLE },
};

export const StatusListParams = Type.Object({
  list: Type.String({ pattern: '^[0-9]{1,9}$', description: "The list's number, as a token's `status.status_list.uri` names it." }),
});

/** GET /api/status-lists/{list} */
export const statusList = {
  tags: ['tokens'],
  operationId: 'statusList',
  summary: 'A Token Status List',
  description:
    "A `statuslist+jwt` (draft-ietf-oauth-status-list): `status_list.lst` is the list's bits (one per token; 1: revoked), DEFLATE-compressed with the ZLIB format, base64url; `sub` is this URL; signed with a key of the JWKS. A JWT access token's `status.status_list` names its list and index (`idx`). A revocation (RFC 7009, a revoke-all, a credential's revocation, the app's deletion) shows here within a second; a verifier may keep a list for its `ttl` in seconds (`STATUS_LIST_TTL_SECONDS`, 60 by default; also `Cache-Control: max-age`). Public, as the JWKS is: the bits say nothing of whose tokens they are.",
  params: StatusListParams,
  response: {
    200: {
      description: 'The list.',
      headers: { 'Cache-Control': { type: 'string', description: '`public, max-age={ttl}`.' } },
      content: { 'application/statuslist+jwt': { schema: Type.String() } },
    },
  },
  errors: {
    404: problem('No token of this list can still be valid, or there never was such a list. Possible codes: NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

export const jwksOtherMethods = otherMethodsSchema(
  'tokens',
  'jwksOtherMethods',
  'GET, HEAD',
  'POST and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`.',
  'Any method but GET and HEAD. Possible codes: METHOD_NOT_ALLOWED.',
);

export const appJwksOtherMethods = otherMethodsSchema(
  'tokens',
  'appJwksOtherMethods',
  'GET, HEAD',
  'POST and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`.',
  'Any method but GET and HEAD. Possible codes: METHOD_NOT_ALLOWED.',
);

export const statusListOtherMethods = otherMethodsSchema(
  'tokens',
  'statusListOtherMethods',
  'GET, HEAD',
  'POST and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`.',
  'Any method but GET and HEAD. Possible codes: METHOD_NOT_ALLOWED.',
);
