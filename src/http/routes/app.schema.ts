import { otherMethodsSchema, preflightSchema } from '../openapi.js';
import {
  answer,
  App,
  APP_NOT_FOUND,
  AppConfiguration,
  AppConfigurationPatch,
  AppParams,
  problem,
  Ref,
  UNAUTHENTICATED,
  UNAVAILABLE,
  adminFeature,
} from '../schemas.js';

/**
 * The app's description and configuration: the schema of each route of `app.ts`, from which
 * Fastify validates its requests, serializes its answers and types its handlers, and from which
 * docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and answered by
 * `../errors.ts`.
 */

/** GET /api/apps/{appId} */
export const describeApp = {
  tags: ['apps'],
  operationId: 'describeApp',
  summary: "The app's public description (admin feature)",
  security: [{ bearer: [] }],
  params: AppParams,
  response: { 200: answer(Ref(App), 'The app; never a secret.') },
  errors: {
    401: UNAUTHENTICATED,
    403: adminFeature('app:read'),
    404: APP_NOT_FOUND,
    503: UNAVAILABLE,
  },
};

/** PUT /api/apps/{appId} */
export const appOtherMethods = otherMethodsSchema(
  'apps',
  'appOtherMethods',
  'GET, HEAD',
  'PUT, POST, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId} */
export const preflightApp = preflightSchema({ operationId: 'preflightApp' });

/** GET /api/apps/{appId}/configuration */
export const getConfiguration = {
  tags: ['apps'],
  operationId: 'getConfiguration',
  summary: "The app's configuration (admin feature)",
  security: [{ bearer: [] }],
  params: AppParams,
  response: { 200: answer(Ref(AppConfiguration), 'The configuration.') },
  errors: {
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:read'),
    404: APP_NOT_FOUND,
    503: UNAVAILABLE,
  },
};

/** PATCH /api/apps/{appId}/configuration */
export const changeConfiguration = {
  tags: ['apps'],
  operationId: 'changeConfiguration',
  summary: "Change the app's configuration (admin feature)",
  description:
    'A JSON merge patch (RFC 7396): the fields sent are changed, the others kept. A changed maximum lifetime applies to tokens issued afterwards; tokens already issued keep their expiry. Recorded as an `app.configuration_changed` event, in the same transaction as the change: if the event cannot be written, nothing changes (`500`).',
  security: [{ bearer: [] }],
  params: AppParams,
  body: Ref(AppConfigurationPatch),
  consumes: ['application/json', 'application/merge-patch+json'],
  response: { 200: answer(Ref(App), 'The app as it now is, as `GET /api/apps/{appId}` returns it.') },
  errors: {
    400: problem(
      'Malformed JSON, not an object, no field, an unknown field, or a value of the wrong type or out of range. Also a JSON body with a `__proto__` key, or a `constructor` key holding a `prototype` (valid JSON, refused as prototype poisoning): the message says so. Possible codes: invalid_request.',
    ),
    401: UNAUTHENTICATED,
    403: adminFeature('configuration:write'),
    404: APP_NOT_FOUND,
    413: problem(
      'The body is over 32768 bytes (32 KiB: room for 100 allowedOrigins of 300 characters; every other body is limited to 4096 bytes). Possible codes: REQUEST_TOO_LARGE.',
    ),
    415: problem('The Content-Type is not one of the accepted ones. Possible codes: UNSUPPORTED_MEDIA_TYPE.'),
    503: UNAVAILABLE,
  },
};

/** PUT /api/apps/{appId}/configuration */
export const configurationOtherMethods = otherMethodsSchema(
  'apps',
  'configurationOtherMethods',
  'GET, HEAD, PATCH',
  'PUT, POST, DELETE and every other method but GET, HEAD and PATCH answer 405 with `Allow: GET, HEAD, PATCH`, once the request is authenticated (401 otherwise).',
);

/** OPTIONS /api/apps/{appId}/configuration */
export const preflightConfiguration = preflightSchema({ operationId: 'preflightConfiguration' });
