import { Type } from 'typebox';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import { answer, APP_NOT_FOUND, AppParams, NO_STORE, problem, Ref, TokenResponse, UNAVAILABLE } from '../schemas.js';

/**
 * The token endpoint and its twin for deployed SDK clients: the schema of each route of `token-
 * endpoint.ts`, from which Fastify validates its requests, serializes its answers and types its
 * handlers, and from which docs/openapi.json is generated (`../openapi.ts`). Its errors are
 * documented here and answered by `../errors.ts`.
 */

// The fields of a token request. What Fastify checks here is what no quirk of the contract decides:
// each field's type and length. `parseTokenRequest` (src/tokens/request.ts) then reads them as the
// contract says: which fields are required where, that a field sent empty or null is absent, that a
// `grant_type` other than `client_credentials` (or a login's `username`) is `unsupported_grant_type`.

const clientId = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 256,
  description:
    "Admin token: the app's ClientID, or the ClientID of one of its credentials (`tcl_` and 24 hex characters). Anonymous token: the AppID.",
});
const clientSecret = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 256,
  description:
    "Admin token: the ClientSecret of the app, or of the credential. Anonymous token: the AppKey (must be non-empty; its value is checked only if the app's configuration `requireAppKey` is on).",
});
const grantType = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  examples: ['client_credentials'],
  description: 'Must be `client_credentials`: any other value is `400 unsupported_grant_type`. Empty or null counts as absent.',
});
const scope = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 2080,
  // A scope that is not a string of scopes is refused as a scope (RFC 6749 §5.2).
  'x-error-code': 'invalid_scope',
  description:
    "RFC 6749 §3.3: scopes separated by single spaces. With a credential's ClientID, the token gets the scopes named, each of which the credential must have (`400 invalid_scope` otherwise); without `scope`, all of the credential's. The app's own ClientID and the anonymous client ignore it, as they always have: their answer has no `scope`. Empty counts as absent.",
});
const expiresAt = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 0,
  description:
    "When the token stops working: UNIX time in milliseconds, UTC. Must be after now and within the app's maximum lifetime. Absent or null: the token never expires (or, if the app sets a maximum lifetime, gets that maximum).",
});

/** A JSON token request, for `application/json` and the SDKs' `application/vnd.kii.OauthTokenRequest+json`. */
function jsonTokenRequest(description: string) {
  return Type.Object(
    {
      grant_type: Type.Optional(grantType),
      client_id: Type.Optional(clientId),
      client_secret: Type.Optional(clientSecret),
      expiresAt: Type.Optional(expiresAt),
      scope: Type.Optional(scope),
    },
    { additionalProperties: true, description },
  );
}

/** A form token request (RFC 6749's encoding): every value a string; `expiresAt` a decimal one. */
export const FORM_TOKEN_REQUEST = Type.Object(
  {
    grant_type: Type.Optional(grantType),
    client_id: Type.Optional(clientId),
    client_secret: Type.Optional(clientSecret),
    expiresAt: Type.Optional(
      Type.String({ pattern: '^[0-9]{0,20}$', description: 'As in JSON, as a decimal string; empty counts as absent.' }),
    ),
    scope: Type.Optional(scope),
  },
  {
    additionalProperties: true,
    description:
      "RFC 6749's encoding. With `client_secret_basic` (`Authorization: Basic base64(ClientID:ClientSecret)`) only `grant_type` is needed. A repeated field is an error.",
  },
);

/** The fields of a token request that a form may not repeat (RFC 6749 §3.2). */
export const TOKEN_REQUEST_FIELDS = Object.keys(FORM_TOKEN_REQUEST.properties);

function tokenRequestBody(description: string) {
  const json = jsonTokenRequest(description);
  return {
    content: {
      'application/json': { schema: json },
      'application/vnd.kii.oauthtokenrequest+json': { schema: json },
      'application/x-www-form-urlencoded': { schema: FORM_TOKEN_REQUEST },
    },
  };
}

/** A token issued, on both token endpoints. */
const TOKEN_ISSUED = answer(
  Ref(TokenResponse),
  'A new token. A token with scopes (from a credential, or asked for with `scope`) also has `scope`; any other has exactly the four fields it always had.',
  NO_STORE,
);

/** The codes of a token request's 400 and what two of them mean, on both token endpoints. */
const TOKEN_REQUEST_400_CODES =
  "Possible codes: invalid_request, unsupported_grant_type, unauthorized_client, invalid_scope. `unauthorized_client`: an admin-token request from a browser (it carries `Origin`), refused with the same answer whether the ClientSecret is right or wrong (the seed's rule 2: request admin tokens from server-side code); a right one is recorded as `app.secret_exposed`, a wrong one counts as a failed admin attempt. `invalid_scope`: `scope` is not a string or is over 2080 characters, names more than 32 scopes, a malformed scope (lower case, `[a-z][a-z0-9_.:-]*`, at most 64 characters), a name in a built-in namespace (`app:`, `configuration:`, `events:`, `tokens:`, `credentials:`) that is not a built-in scope, or a scope the credential does not have; or `scope` is sent for an anonymous token.";

/** What both token endpoints refuse alike: an unknown app, a body too large or of another type, too many requests. */
const TOKEN_REQUEST_REFUSED = {
  404: APP_NOT_FOUND,
  413: problem('The body is over 4096 bytes. Possible codes: REQUEST_TOO_LARGE.'),
  415: problem('The Content-Type is not one of the accepted ones. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
  429: problem(
    'Too many token requests from this address, too many failed admin attempts on this app from this address or from every address together, or (for an app that enforces attestation) more than 30 wrong attestations from this address in the last minute. Possible codes: TOO_MANY_REQUESTS.',
    { 'Retry-After': { description: 'Seconds to wait before trying again.', type: 'integer' } },
  ),
  503: UNAVAILABLE,
};

/** POST /api/apps/{appId}/oauth2/token */
export const issueToken = {
  tags: ['tokens'],
  operationId: 'issueToken',
  summary: 'Obtain an admin token or an anonymous token',
  description:
    "The variant is chosen by `client_id`: the app's ClientID gives an admin token (`id` = the app's admin id), the ClientID of one of the app's credentials an admin token limited to the credential's scopes (same `id`; it never outlives the credential's `expiresAt`), the AppID gives an anonymous token (`id` = `ANONYMOUS`). `scope` (RFC 6749 §3.3) narrows an admin token's scopes. The client authenticates in one of three ways (RFC 6749 §2.3.1): the seed's `Authorization: Basic base64(AppID:anything)` with `client_id` and `client_secret` in the body; `client_secret_post`, the same fields in the body and no `Authorization` header (the path names the app); or `client_secret_basic`, `Basic base64(ClientID:ClientSecret)` for an admin token or `Basic base64(AppID:AppKey)` for an anonymous one, with no credentials in the body. Credentials in the header and in the body that disagree are `400 invalid_request`. Unknown query parameters and body fields are ignored.",
  security: [{ basicAppId: [] }, { clientSecretBasic: [] }, {}],
  params: AppParams,
  body: tokenRequestBody(
    "`grant_type` is required, and must be `client_credentials`. `client_id` and `client_secret` are required unless the `Authorization` header carries the client's credentials (`client_secret_basic`); if both carry them, they must agree. The SDKs' type is `application/vnd.kii.OauthTokenRequest+json` as they spell it (media types are case-insensitive).",
  ),
  response: {
    200: TOKEN_ISSUED,
  },
  errors: {
    400: problem(
      `Malformed request, missing or wrong-typed field, \`expiresAt\` not an integer, negative, not after now or beyond the app's maximum lifetime, or an unsupported grant type (also a body with \`username\` or \`password\` and no \`grant_type\`: a user or thing login of deployed SDKs, which this service does not serve; the message says that only \`client_credentials\` is served). Credentials in the \`Authorization\` header and in the body that disagree (RFC 6749 §2.3), whether the header's user is a ClientID or not. \`Basic base64(AppID:)\` with no credentials in the body (the AppKey is missing). Also a JSON body with a \`__proto__\` key, or a \`constructor\` key holding a \`prototype\` (valid JSON, refused as prototype poisoning), and a form body that looks like JSON (\`curl -d '{…}'\` without \`Content-Type: application/json\`): the message says which. ${TOKEN_REQUEST_400_CODES}`,
    ),
    401: problem(
      "A malformed Basic header or another scheme (a bearer token is no client credential), no credentials at all (no `Authorization` header and none in the body), a Basic user part that is not the AppID with nothing in the body (taken as `client_secret_basic`, an admin attempt), a `client_id` that is neither the ClientID nor the AppID, a wrong ClientSecret (indistinguishable), or a wrong AppKey where the app requires it. An anonymous token request of an app whose `anonymousAttestation` is `enforce` without `X-Tessera-Attestation` (`ATTESTATION_REQUIRED`), or with one that is malformed, of an unknown provider, over 10240 characters, for another app, expired, forged, wrong or used before (`ATTESTATION_INVALID`; the message says which, and a `token.refused` event records it). A credential's ClientID with a wrong ClientSecret, after the credential's `expiresAt`, or from a client address not on its `allowFrom` gets the same answer as a wrong ClientSecret (the same body, after the same work), and counts against the limits on failed admin attempts. Possible codes: invalid_client, ATTESTATION_REQUIRED, ATTESTATION_INVALID.",
      { 'WWW-Authenticate': { description: '`Basic realm="tessera"`', type: 'string' } },
    ),
    ...TOKEN_REQUEST_REFUSED,
  },
};

/** GET /api/apps/{appId}/oauth2/token */
export const tokenEndpointOtherMethods = otherMethodsSchema(
  'tokens',
  'tokenEndpointOtherMethods',
  'POST',
  'GET, PUT, PATCH, DELETE, OPTIONS and every other method but POST answer 405 with `Allow: POST`.',
  'Any method but POST. Possible codes: METHOD_NOT_ALLOWED.',
);

/** OPTIONS /api/apps/{appId}/oauth2/token */
export const preflightToken = preflightSchema({ operationId: 'preflightToken' });

/** POST /api/oauth2/token */
export const issueTokenForSdk = {
  tags: ['tokens'],
  operationId: 'issueTokenForSdk',
  summary: 'Obtain a token the way deployed SDK clients do',
  description:
    'The app is named by `X-Kii-AppID`; `grant_type` is optional (if present it must be `client_credentials`); no Authorization header is needed. SDK clients add `?disable_cache=<ms>`, which is ignored.',
  headers: Type.Object({
    // Fastify compares header names in lower case.
    'X-Kii-AppID': Type.String({ description: 'The AppID of the app.' }),
    'X-Kii-AppKey': Type.Optional(Type.String({ description: 'Sent by SDK clients; not checked.' })),
  }),
  body: tokenRequestBody(
    "`grant_type` may be left out; if present it must be `client_credentials`. `client_id` and `client_secret` are required unless the `Authorization` header carries the client's credentials. The SDKs' type is `application/vnd.kii.OauthTokenRequest+json` as they spell it (media types are case-insensitive).",
  ),
  response: {
    200: TOKEN_ISSUED,
  },
  errors: {
    400: problem(
      `As on the app's token endpoint (a body with \`username\` or \`password\` and no \`grant_type\`, the SDKs' user and thing logins, is \`unsupported_grant_type\`, saying that only \`client_credentials\` is served here; credentials in an \`Authorization: Basic\` header and in the body that disagree are \`invalid_request\`), or a missing X-Kii-AppID header. ${TOKEN_REQUEST_400_CODES}`,
    ),
    401: problem(
      "No credentials at all (none in the body, no Basic header), a Basic user part that is not the AppID with nothing in the body, a client_id that is neither the ClientID nor the AppID, or a wrong ClientSecret (indistinguishable). A credential's ClientID with a wrong ClientSecret, after the credential's `expiresAt`, or from a client address not on its `allowFrom` gets the same answer as a wrong ClientSecret (the same body, after the same work), and counts against the limits on failed admin attempts. Possible codes: invalid_client, ATTESTATION_REQUIRED, ATTESTATION_INVALID.",
      { 'WWW-Authenticate': { description: '`Basic realm="tessera"`', type: 'string' } },
    ),
    ...TOKEN_REQUEST_REFUSED,
  },
};

/** GET /api/oauth2/token */
export const sdkTokenEndpointOtherMethods = otherMethodsSchema(
  'tokens',
  'sdkTokenEndpointOtherMethods',
  'POST',
  'GET, PUT, PATCH, DELETE, OPTIONS and every other method but POST answer 405 with `Allow: POST`.',
  'Any method but POST. Possible codes: METHOD_NOT_ALLOWED.',
);

/** OPTIONS /api/oauth2/token */
export const preflightSdkToken = preflightSchema({
  operationId: 'preflightSdkToken',
  summary: 'CORS preflight of the SDK token path',
  description:
    "A preflight names no app (it carries header names, not `X-Kii-AppID`'s value), so it is answered for every origin; the token request's answer is readable only by the origins of the app that `X-Kii-AppID` names.",
  answers: ['204'],
});
