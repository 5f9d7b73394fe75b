import type { FastifyInstance, FastifyPluginCallback } from 'fastify';
import { packageVersion } from '../package-root.js';
import { MAX_REQUEST_ID_LENGTH, REQUEST_ID_PATTERN } from './request-id.js';
import { methodNotAllowed } from './schemas.js';

/**
 * docs/openapi.json, generated from the routes: each route's schema (its `*.schema.ts`) gives its
 * operation, `@fastify/swagger` collects them, and this file adds what belongs to the document
 * rather than to one route: its info, tags and security schemes, the CORS parameters, headers and
 * answers of the preflights, and `X-Request-Id` on every operation and every answer.
 * `npm run openapi` writes the file; tests/http/openapi.test.ts checks that it is what the routes
 * generate. The service serves the file (`routes/openapi.ts`), and never loads `@fastify/swagger`.
 */

const REQUEST_ID_SCHEMA = { type: 'string', maxLength: MAX_REQUEST_ID_LENGTH, pattern: REQUEST_ID_PATTERN };

const INFO = {
  title: 'Tessera token API',
  description:
    "Admin tokens (ClientID + ClientSecret), anonymous tokens (AppID + AppKey), and Basic anonymous access (`Authorization: Basic base64(AppID:anything)`) for the apps of an application backend. Every error is `{errorCode, error, error_description, message}`; no error text contains a `%` character. Browser apps: each app lists in its configuration (`allowedOrigins`) the origins whose pages may call the service; every answer to such an origin, errors included, carries `Access-Control-Allow-Origin` (the origin), `Vary: Origin` and `Access-Control-Expose-Headers: WWW-Authenticate, Retry-After, X-Request-Id`, and preflights (`OPTIONS`) are answered before authentication. Never `Access-Control-Allow-Credentials`. An admin-token request from a browser (with `Origin`) is refused: `400 unauthorized_client`. Request ids: every answer carries `X-Request-Id` (components/headers/XRequestId), the `reqId` of the service's log lines for the request; a caller may send its own (components/parameters/XRequestId).",
};

const SERVERS = [
  {
    url: 'http://127.0.0.1:8080',
  },
];

const TAGS = [
  {
    name: 'tokens',
  },
  {
    name: 'authentication',
  },
  {
    name: 'apps',
  },
  {
    name: 'events',
  },
  {
    name: 'webhooks',
    description: "An app's webhooks: its audit events sent as signed CloudEvents (docs/webhooks.md).",
  },
  {
    name: 'operations',
  },
  {
    name: 'browsers',
    description: "CORS preflights, answered from each app's `allowedOrigins`.",
  },
];

const SECURITY_SCHEMES = {
  basicAppId: {
    type: 'http',
    scheme: 'basic',
    description:
      "`base64(AppID:anything)`: anonymous access without a token. On the token endpoint it is the seed's header, with the credentials in the body; with none in the body, `base64(AppID:AppKey)` is RFC 6749 `client_secret_basic` of the anonymous client (an anonymous token; the AppKey is checked only if the app's `requireAppKey` is on).",
  },
  clientSecretBasic: {
    type: 'http',
    scheme: 'basic',
    description:
      "RFC 6749 `client_secret_basic`: `base64(ClientID:ClientSecret)` (each form-encoded), the app's own or one of its credentials'. On the token endpoint with a form body `grant_type=client_credentials`; on revocation and introspection it makes the caller the app's admin (with a credential's, limited to its scopes). A wrong one is `401 invalid_client` and counts against the limits on failed admin attempts.",
  },
  bearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'An admin token or an anonymous token of this app.',
  },
  sdkAppId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Kii-AppID',
    description:
      'With `X-Kii-AppKey` and no `Authorization` header: what deployed SDK clients send on their anonymous calls; Basic anonymous access to the app it names, which must be the app of the path.',
  },
  sdkAppKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Kii-AppKey',
    description: 'The AppKey, sent with `X-Kii-AppID`; must be present and is not checked (Basic anonymous access never needs it).',
  },
};

const PARAMETERS = {
  ...{
    Origin: {
      name: 'Origin',
      in: 'header',
      required: true,
      schema: {
        type: 'string',
      },
      description: "The page's origin, as the browser sends it.",
    },
    AccessControlRequestMethod: {
      name: 'Access-Control-Request-Method',
      in: 'header',
      required: true,
      schema: {
        type: 'string',
      },
      description:
        'What makes an OPTIONS request a CORS preflight. Without it (or without `Origin`), OPTIONS is answered like any method the path does not allow.',
    },
    AccessControlRequestHeaders: {
      name: 'Access-Control-Request-Headers',
      in: 'header',
      required: false,
      schema: {
        type: 'string',
      },
    },
  },
  XRequestId: {
    ...{
      name: 'X-Request-Id',
      in: 'header',
      required: false,
      description:
        "The caller's own id for the request (a UUID, a proxy's `$request_id`), echoed in the answer's `X-Request-Id` and written in the service's log lines as `reqId`: taken when it is one header of at most 128 characters of letters, digits and `-_.:;=+/@`. Any other value is not refused: it is neither echoed nor logged, and the request gets an id of the service's instead. Pages of an origin the app lists may send it (preflights allow it).",
    },
    schema: REQUEST_ID_SCHEMA,
  },
};

const HEADERS = {
  ...{
    AccessControlAllowOrigin: {
      description: "The request's `Origin`, for an origin the app lists (with `Vary: Origin`). Absent otherwise.",
      schema: {
        type: 'string',
      },
    },
    AccessControlAllowMethods: {
      schema: {
        type: 'string',
        const: 'GET, HEAD, POST, PUT, PATCH, DELETE',
      },
    },
    AccessControlAllowHeaders: {
      description:
        '`Authorization, Content-Type, X-Kii-AppID, X-Kii-AppKey, X-Kii-SDK, X-Request-Id, X-Tessera-Attestation, traceparent, tracestate`; for forward authentication, the headers the preflight asks for.',
      schema: {
        type: 'string',
      },
    },
    AccessControlMaxAge: {
      schema: {
        type: 'string',
        const: '7200',
      },
    },
    AccessControlExposeHeaders: {
      schema: {
        type: 'string',
        const: 'WWW-Authenticate, Retry-After, X-Request-Id',
      },
    },
  },
  XRequestId: {
    ...{
      description:
        "The request's id, on every answer (errors, `404`s, `405`s and preflights included), and the `reqId` of the service's log lines for the request: the request's own `X-Request-Id` when it was taken (see the parameter), otherwise the trace id of a valid W3C `traceparent`, otherwise one the service made (`9f1c2a7e5b3d4c60-1k2`: a random prefix of the instance and a count). A page of an origin the app lists can read it (`Access-Control-Expose-Headers`). Quote it when reporting a problem with a request.",
      required: true,
    },
    schema: REQUEST_ID_SCHEMA,
  },
};

/** An error answer among the document's components: the contract's body, and the request's id. */
function errorAnswer(description: string) {
  return {
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    headers: { 'X-Request-Id': { $ref: '#/components/headers/XRequestId' } },
  };
}

const RESPONSES = {
  PreflightAllowed: {
    description: 'A preflight from an origin the app lists: no body. Never `Access-Control-Allow-Credentials`.',
    headers: {
      'Access-Control-Allow-Origin': {
        $ref: '#/components/headers/AccessControlAllowOrigin',
      },
      'Access-Control-Allow-Methods': {
        $ref: '#/components/headers/AccessControlAllowMethods',
      },
      'Access-Control-Allow-Headers': {
        $ref: '#/components/headers/AccessControlAllowHeaders',
      },
      'Access-Control-Max-Age': {
        $ref: '#/components/headers/AccessControlMaxAge',
      },
      'Access-Control-Expose-Headers': {
        $ref: '#/components/headers/AccessControlExposeHeaders',
      },
      'X-Request-Id': {
        $ref: '#/components/headers/XRequestId',
      },
    },
  },
  PreflightRefused: errorAnswer(
    'A preflight from an origin the app does not list (or an app that lists none), without CORS headers: the browser sends nothing more. Possible codes: ORIGIN_NOT_ALLOWED.',
  ),
  PreflightAppNotFound: errorAnswer('No app has this AppID. Possible codes: APP_NOT_FOUND.'),
};

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const REQUEST_ID_PARAMETER = { $ref: '#/components/parameters/XRequestId' };
const REQUEST_ID_HEADER = { $ref: '#/components/headers/XRequestId' };
const PREFLIGHT_PARAMETERS = ['Origin', 'AccessControlRequestMethod', 'AccessControlRequestHeaders'].map((name) => ({
  $ref: `#/components/parameters/${name}`,
}));
/** The answers to a preflight, in components/responses, by status. */
const PREFLIGHT_ANSWERS: Record<string, string> = { 204: 'PreflightAllowed', 403: 'PreflightRefused', 404: 'PreflightAppNotFound' };

interface PreflightOptions {
  operationId: string;
  summary?: string;
  description?: string;
  /** Its answers that are those of components/responses (by default all three); `errors` may add others. */
  answers?: readonly string[];
  errors?: Record<string, unknown>;
}

/**
 * The schema of a path's `OPTIONS` route, which documents the CORS preflight: preflights are answered
 * before any route, by `browserAccess` (`cors.ts`), from the app's `allowedOrigins`, and the route
 * itself answers an `OPTIONS` that is not one (`405`). Its parameters and answers are components of
 * the document, put in by `completeDocument`.
 */
export function preflightSchema({ operationId, summary, description, answers = ['204', '403', '404'], errors }: PreflightOptions) {
  return {
    tags: ['browsers'],
    operationId,
    summary: summary ?? 'CORS preflight',
    description:
      description ??
      "Answered before authentication (a preflight carries no credentials), from the app's `allowedOrigins`. An OPTIONS request that is not a preflight is answered like any other method the path does not allow.",
    security: [],
    'x-preflight': answers,
    ...(errors === undefined ? {} : { errors }),
  };
}

/**
 * The schema of the route that answers the methods a path does not serve (`refuseOtherMethods`),
 * documented as one of them: `405` with `Allow: allow`.
 */
export function otherMethodsSchema(tag: string, operationId: string, allow: string, description: string, refusal?: string) {
  return {
    tags: [tag],
    operationId,
    summary: 'Other methods are refused',
    description,
    errors: { 405: methodNotAllowed(allow, refusal) },
  };
}

interface Parameter {
  name?: string;
  in?: string;
  description?: string;
  $ref?: string;
}
interface Answer {
  $ref?: string;
  headers?: Record<string, unknown>;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean };
  responses: Record<string, Answer>;
  'x-preflight'?: string[];
  /** False for a body that may be left out (`@fastify/swagger` says every body is required). */
  'x-body-required'?: boolean;
}
type PathItem = Partial<Record<(typeof HTTP_METHODS)[number], Operation>> & { parameters?: Parameter[] };
interface Document {
  paths: Record<string, PathItem>;
}

/**
 * What `@fastify/swagger` leaves to the document, done once it has every operation: each path's own
 * parameters (the AppID, …) said once for the path, as the best-described operation gives them;
 * `X-Request-Id` on every path and every answer; the preflights' parameters and answers.
 */
function completeDocument(document: Document): Document {
  for (const [path, item] of Object.entries(document.paths)) {
    const pathParameters: Parameter[] = [];
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const own: Parameter[] = [];
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'path') {
          own.push(parameter);
          continue;
        }
        const index = pathParameters.findIndex((known) => known.name === parameter.name);
        if (index === -1) pathParameters.push(parameter);
        else if (pathParameters[index]!.description === undefined && parameter.description !== undefined) pathParameters[index] = parameter;
      }
      const preflight = operation['x-preflight'];
      if (preflight !== undefined) {
        own.unshift(...PREFLIGHT_PARAMETERS);
        for (const status of preflight) operation.responses[status] = { $ref: `#/components/responses/${PREFLIGHT_ANSWERS[status]}` };
        delete operation['x-preflight'];
      }
      if (operation['x-body-required'] === false && operation.requestBody !== undefined) operation.requestBody.required = false;
      delete operation['x-body-required'];
      if (own.length > 0) operation.parameters = own;
      else delete operation.parameters;
      operation.responses = Object.fromEntries(
        Object.entries(operation.responses)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([status, answer]) => [
            status,
            answer.$ref === undefined ? { ...answer, headers: { ...answer.headers, 'X-Request-Id': REQUEST_ID_HEADER } } : answer,
          ]),
      );
    }
    pathParameters.sort((a, b) => path.indexOf(`{${a.name}}`) - path.indexOf(`{${b.name}}`));
    document.paths[path] = { parameters: [...pathParameters, REQUEST_ID_PARAMETER], ...item };
  }
  return document;
}

/** What the document reads of a route's schema besides what Fastify reads. */
interface RouteSchema {
  operationId?: string;
  params?: { properties?: Record<string, unknown> };
  response?: Record<string, unknown>;
  /** The route's error answers: documented, not serialized by Fastify (`schemas.ts`, `problem`). */
  errors?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * Which routes are operations of the document, and under which path: a route with an `operationId`
 * is; any other (the portal's pages, the methods of a path that one documented method stands for)
 * is not. Its answers are its `response` and its `errors`. A wildcard is the document's `{path}`.
 */
function operationOf({ schema, url }: { schema?: RouteSchema; url: string }): { schema: RouteSchema; url: string } {
  if (schema?.operationId === undefined) return { schema: { ...schema, hide: true }, url };
  const { errors, ...rest } = schema;
  const operation = { ...rest, response: { ...schema.response, ...errors } };
  if (!url.endsWith('/*')) return { schema: operation, url };
  const { '*': tail, ...named } = schema.params?.properties ?? {};
  const params = tail === undefined ? schema.params : { ...schema.params, properties: { ...named, path: tail } };
  return { schema: { ...operation, params }, url: `${url.slice(0, -1)}{path}` };
}

/** The options of `@fastify/swagger` that make docs/openapi.json. */
export function swaggerOptions() {
  return {
    openapi: {
      openapi: '3.1.0',
      info: { ...INFO, version: packageVersion() },
      servers: SERVERS,
      tags: TAGS,
      components: { securitySchemes: SECURITY_SCHEMES, parameters: PARAMETERS, headers: HEADERS, responses: RESPONSES },
    },
    // OpenAPI 3.1 is JSON Schema: `const` stays `const`.
    convertConstToEnum: false,
    // Shared schemas are named in components/schemas by their `$id` (`schemas.ts`).
    refResolver: {
      buildLocalReference: (json: { $id?: unknown }, _baseUri: unknown, _fragment: unknown, i: number) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transform: operationOf,
    transformObject: ({ openapiObject }: { openapiObject: unknown }) => completeDocument(openapiObject as Document),
  };
}

/**
 * docs/openapi.json as the routes make it: `build` makes the server, calling its argument first on
 * the new instance (to register `@fastify/swagger`, which must see every route added).
 */
export async function generateOpenApiDocument(build: (document: (app: FastifyInstance) => void) => FastifyInstance): Promise<string> {
  // Loaded here only: the service itself serves the file, and does not need the package. By a name
  // TypeScript does not follow: the package's types would add its options to every route of the service.
  const name = '@fastify/swagger';
  const { default: swagger } = (await import(name)) as { default: FastifyPluginCallback<object> };
  const app = build((instance) => {
    void instance.register(swagger, swaggerOptions());
  });
  try {
    await app.ready();
    return `${JSON.stringify((app as unknown as { swagger(): unknown }).swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}
