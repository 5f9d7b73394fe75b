import { Type } from 'typebox';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import {
  answer,
  APP_NOT_FOUND,
  AppParams,
  Introspection,
  problem,
  Ref,
  UNAVAILABLE,
  INSUFFICIENT_SCOPE_CHALLENGE,
  NO_STORE,
} from '../schemas.js';

/**
 * Revocation (RFC 7009) and introspection (RFC 7662): the schema of each route of `revocation-
 * introspection.ts`, from which Fastify validates its requests, serializes its answers and types
 * its handlers, and from which docs/openapi.json is generated (`../openapi.ts`). Its errors are
 * documented here and answered by `../errors.ts`.
 */

/**
 * The body of a revocation or introspection request, JSON or a form: the token, and the client's
 * credentials when it authenticates with them (`client_secret_post`). Checked where the token is
 * read, after the caller is authenticated (`revocation-introspection.ts`).
 */
function tokenParameterBody(token: string) {
  const fields = {
    token: Type.String({ minLength: 1, description: token }),
    token_type_hint: Type.Optional(Type.String({ description: 'Accepted and ignored.' })),
    client_id: Type.Optional(
      Type.Unsafe<string | null>({
        type: ['string', 'null'],
        maxLength: 256,
        description:
          "RFC 6749 `client_secret_post`: the ClientID (the caller is then the app's admin), the ClientID of one of the app's credentials (the app's admin, with the credential's scopes), or the AppID (an anonymous caller).",
      }),
    ),
    client_secret: Type.Optional(
      Type.Unsafe<string | null>({
        type: ['string', 'null'],
        maxLength: 256,
        description: "With `client_id`: the ClientSecret (the app's, or the credential's), or the AppKey (not checked).",
      }),
    ),
  };
  return {
    content: {
      'application/json': { schema: Type.Object(fields, { additionalProperties: true }) },
      'application/x-www-form-urlencoded': {
        schema: Type.Object(fields, { additionalProperties: true, description: 'A repeated `token` is an error.' }),
      },
    },
  };
}

/** The fields of a revocation or introspection form that may not be repeated. */
export const TOKEN_PARAMETER_FIELDS = ['token', 'client_id', 'client_secret'];

/** A revocation's or an introspection's 400, whichever way its caller authenticates. */
const CALLER_REQUEST_MALFORMED = problem(
  "No body, a body that is not a JSON object or form, or `token` missing, empty, not a string or repeated. Also a JSON body with a `__proto__` key, or a `constructor` key holding a `prototype` (valid JSON, refused as prototype poisoning), and a form body that looks like JSON (`curl -d '{…}'` without `Content-Type: application/json`): the message says which. Possible codes: invalid_request, unauthorized_client. `unauthorized_client`: ClientID and ClientSecret sent from a browser (the request carries `Origin`), refused with the same answer whether the ClientSecret is right or wrong (the seed's rule 2); a right one is recorded as `app.secret_exposed`, a wrong one counts as a failed admin attempt. Client credentials in the `Authorization` header and in the body that disagree, or a bearer token and client credentials together (RFC 6749 §2.3).",
);

/** A revocation's or an introspection's 401. */
const CALLER_UNAUTHENTICATED = problem(
  "Client credentials that are not the app's (a wrong ClientSecret, an unknown ClientID, another app's), or a credential's used after its `expiresAt` or from a client address not on its `allowFrom` (the same answer): invalid_client, an admin attempt counted against the limits on failed admin attempts. No credentials, another scheme, or a Basic header that does not name this app with nothing in the body: UNAUTHORIZED. An unknown, malformed, expired or revoked token, or a token of another app: INVALID_TOKEN. Possible codes: invalid_client, UNAUTHORIZED, INVALID_TOKEN.",
  {
    'WWW-Authenticate': {
      description:
        '`Basic realm="tessera"` for invalid_client; `Bearer error="invalid_token"` for INVALID_TOKEN; `Basic realm="tessera", Bearer realm="tessera"` for UNAUTHORIZED.',
      type: 'string',
    },
  },
);

/** POST /api/apps/{appId}/oauth2/revoke */
export const revokeToken = {
  tags: ['tokens'],
  operationId: 'revokeToken',
  summary: 'Revoke a token (RFC 7009)',
  description:
    "The caller authenticates as on every other path (a token, Basic anonymous access, the SDKs' `X-Kii-AppID`) or as an OAuth client (RFC 7009 §2.1): `client_secret_basic` or `client_secret_post` with the ClientID and ClientSecret (the app's admin) or the AppID and AppKey (anonymous). The admin may revoke any token of the app; an admin with scopes (a token issued from a credential or asked for with `scope`, or a credential's client authentication) only with `tokens:revoke`. Any other caller, and an admin with scopes but without `tokens:revoke`, may revoke any anonymous token of the app it presents (holding a token is what it takes to revoke it), and no admin token but its own. A token that is unknown, malformed, already revoked, expired or of another app is not an error: 200 all the same. Revocations count against the token endpoint's limit per client address. A self-verifying anonymous token revoked alone is kept (its id) until it expires; callers other than the app's admin may keep at most `REVOKED_TOKENS_MAX_PER_APP` of the app's tokens revoked this way (then `429`).",
  security: [{ bearer: [] }, { clientSecretBasic: [] }, {}, { basicAppId: [] }, { sdkAppId: [], sdkAppKey: [] }],
  params: AppParams,
  body: tokenParameterBody('The access token to revoke.'),
  response: {
    200: answer(
      Type.Unsafe<Record<string, unknown>>({ type: 'object', maxProperties: 0 }),
      'Revoked, or nothing to revoke: an empty JSON object.',
      NO_STORE,
    ),
  },
  errors: {
    400: CALLER_REQUEST_MALFORMED,
    401: CALLER_UNAUTHENTICATED,
    403: problem(
      'A caller other than the admin names an admin token other than its own: ADMIN_REQUIRED. An admin with scopes but without `tokens:revoke` names an admin token other than its own: INSUFFICIENT_SCOPE. Possible codes: ADMIN_REQUIRED, INSUFFICIENT_SCOPE.',
      INSUFFICIENT_SCOPE_CHALLENGE,
    ),
    404: APP_NOT_FOUND,
    413: problem('The body is over 4096 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not one of the accepted ones. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    429: problem(
      "Too many requests from this address, too many of the app's anonymous tokens revoked one by one by callers other than its admin, or too many failed admin attempts on the app (from this address, or from everywhere): then the right ClientSecret gets `429` too until the minute is over. Possible codes: TOO_MANY_REQUESTS.",
      { 'Retry-After': { description: 'Seconds to wait before trying again.', type: 'integer' } },
    ),
    503: UNAVAILABLE,
  },
};

/** GET /api/apps/{appId}/oauth2/revoke */
export const revokeOtherMethods = otherMethodsSchema(
  'tokens',
  'revokeOtherMethods',
  'POST',
  'GET, PUT, DELETE and every other method but POST answer 405 with `Allow: POST`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/oauth2/revoke */
export const preflightRevoke = preflightSchema({ operationId: 'preflightRevoke' });

/** POST /api/apps/{appId}/oauth2/introspect */
export const introspectToken = {
  tags: ['tokens'],
  operationId: 'introspectToken',
  summary: 'Introspect a token (RFC 7662; admin feature)',
  description:
    "Tells whether a token is active in this app, and whose it is. For the app's admin: an admin token, or the client credentials ClientID and ClientSecret (RFC 7662 §2.1; `client_secret_basic` or `client_secret_post`), what a resource server holds; a token with scopes, or a credential's ClientID and ClientSecret, only with `tokens:introspect`.",
  security: [{ bearer: [] }, { clientSecretBasic: [] }, {}, { basicAppId: [] }, { sdkAppId: [], sdkAppKey: [] }],
  params: AppParams,
  body: tokenParameterBody('The access token to introspect.'),
  response: {
    200: answer(
      Ref(Introspection),
      '`{"active": false}` for a token that is unknown, malformed, revoked, expired or of another app.',
      NO_STORE,
    ),
  },
  errors: {
    400: CALLER_REQUEST_MALFORMED,
    401: CALLER_UNAUTHENTICATED,
    403: problem(
      "The caller is not the app's admin (an anonymous token, Basic anonymous access, the AppID and AppKey): ADMIN_REQUIRED. An admin token with scopes, or a credential's client authentication, without `tokens:introspect`: INSUFFICIENT_SCOPE. Possible codes: ADMIN_REQUIRED, INSUFFICIENT_SCOPE.",
      INSUFFICIENT_SCOPE_CHALLENGE,
    ),
    404: APP_NOT_FOUND,
    413: problem('The body is over 4096 bytes. Possible codes: REQUEST_TOO_LARGE.'),
    415: problem('The Content-Type is not one of the accepted ones. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    429: problem(
      'Too many failed admin attempts on the app (from this address, or from everywhere): then the right ClientSecret gets `429` too until the minute is over. Possible codes: TOO_MANY_REQUESTS.',
      { 'Retry-After': { description: 'Seconds to wait before trying again.', type: 'integer' } },
    ),
    503: UNAVAILABLE,
  },
};

/** GET /api/apps/{appId}/oauth2/introspect */
export const introspectOtherMethods = otherMethodsSchema(
  'tokens',
  'introspectOtherMethods',
  'POST',
  'GET, PUT, DELETE and every other method but POST answer 405 with `Allow: POST`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/oauth2/introspect */
export const preflightIntrospect = preflightSchema({ operationId: 'preflightIntrospect' });
