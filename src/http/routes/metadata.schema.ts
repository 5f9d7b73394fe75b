import { otherMethodsSchema } from '../openapi.js';
import { answer, AppParams, AuthorizationServerMetadata, problem, Ref, UNAVAILABLE } from '../schemas.js';

/**
 * Each app's Authorization Server Metadata (RFC 8414): the schema of each route of `metadata.ts`,
 * from which Fastify validates its requests, serializes its answers and types its handlers, and
 * from which docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and
 * answered by `../errors.ts`.
 */

/** GET /.well-known/oauth-authorization-server/api/apps/{appId} */
export const authorizationServerMetadata = {
  tags: ['tokens'],
  operationId: 'authorizationServerMetadata',
  summary: 'OAuth 2.0 Authorization Server Metadata of an app (RFC 8414)',
  description:
    "Public, like the AppID. The URLs in it start with `PUBLIC_URL`, never with the request's `Host`. Without `PUBLIC_URL`, a server that listens on a loopback address (the default `HOST`) uses the URL it listens on (`http://127.0.0.1:8080`); any other is `404`. With a `PUBLIC_URL` that has a path (`https://example.com/tessera`), this document is also served at `/.well-known/oauth-authorization-server/tessera/api/apps/{appId}`, where RFC 8414 puts it. openid-client finds it with `discovery(issuer, …, { algorithm: 'oauth2' })`.",
  params: AppParams,
  response: { 200: answer(Ref(AuthorizationServerMetadata), "The app's metadata.") },
  errors: {
    404: problem(
      'No app has this AppID (APP_NOT_FOUND), or the service does not know its public URL: `PUBLIC_URL` is not set and it does not listen on a loopback address (NOT_FOUND). Possible codes: APP_NOT_FOUND, NOT_FOUND.',
    ),
    503: UNAVAILABLE,
  },
};

/** POST /.well-known/oauth-authorization-server/api/apps/{appId} */
export const authorizationServerMetadataOtherMethods = otherMethodsSchema(
  'tokens',
  'authorizationServerMetadataOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`; no credentials are needed.',
);

/** GET /api/apps/{appId}/.well-known/openid-configuration */
export const openidConfiguration = {
  tags: ['tokens'],
  operationId: 'openidConfiguration',
  summary: 'Not an OpenID provider: where OpenID discovery looks, a pointer to the OAuth metadata',
  description:
    "Any method, without credentials: `404 NOT_FOUND` with a message naming `/.well-known/oauth-authorization-server/api/apps/{appId}` (in openid-client: `discovery` with `algorithm: 'oauth2'`).",
  params: AppParams,
  errors: { 404: problem('Possible codes: NOT_FOUND.') },
};
