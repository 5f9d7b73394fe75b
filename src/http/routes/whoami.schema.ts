import { Type } from 'typebox';
import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import { answer, APP_NOT_FOUND, AppId, AppParams, problem, Ref, UNAUTHENTICATED, UNAVAILABLE, Whoami } from '../schemas.js';

/**
 * whoami, and every other path under an app: the schema of each route of `whoami.ts`, from which
 * Fastify validates its requests, serializes its answers and types its handlers, and from which
 * docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and answered by
 * `../errors.ts`.
 */

/** GET /api/apps/{appId}/whoami */
export const whoami = {
  tags: ['authentication'],
  operationId: 'whoami',
  summary: 'The principal this request is authenticated as',
  security: [{ basicAppId: [] }, { sdkAppId: [], sdkAppKey: [] }, { bearer: [] }],
  params: AppParams,
  response: { 200: answer(Ref(Whoami), 'The principal.') },
  errors: { 401: UNAUTHENTICATED, 404: APP_NOT_FOUND, 503: UNAVAILABLE },
};

/** POST /api/apps/{appId}/whoami */
export const whoamiOtherMethods = otherMethodsSchema(
  'authentication',
  'whoamiOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE, TRACE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`, once the request is authenticated (401 otherwise). So does CONNECT, after which the connection is closed.',
);

/** OPTIONS /api/apps/{appId}/whoami */
export const preflightWhoami = preflightSchema({ operationId: 'preflightWhoami' });

/** GET /api/apps/{appId}/{path} */
export const otherAppPaths = {
  tags: ['authentication'],
  operationId: 'otherAppPaths',
  summary: 'Any other path under an app: authenticated, then not found',
  description:
    "Every request under `/api/apps/{appId}/` is authenticated first. An admin token on a path with a segment that is `me` in any case (also percent-encoded) is refused with 400 ME_NOT_ALLOWED_FOR_ADMIN. An `Authorization` header sent twice is 400 invalid_request. Paths this service does not serve answer 404 NOT_FOUND once authenticated, whatever the method and the body's content type (deployed SDKs send types of their own).",
  security: [{ basicAppId: [] }, { sdkAppId: [], sdkAppKey: [] }, { bearer: [] }],
  // Fastify names the rest of the path `*`; the document, `{path}`.
  params: Type.Object({ appId: AppId, '*': Type.String({ description: 'Any other path under the app.' }) }),
  errors: {
    400: problem('An admin token on a path with a `me` segment. Possible codes: ME_NOT_ALLOWED_FOR_ADMIN.'),
    401: UNAUTHENTICATED,
    404: problem('No such resource, or no such app. Possible codes: NOT_FOUND, APP_NOT_FOUND.'),
    503: UNAVAILABLE,
  },
};

/** OPTIONS /api/apps/{appId}/{path} */
export const preflightOtherAppPaths = preflightSchema({ operationId: 'preflightOtherAppPaths' });
