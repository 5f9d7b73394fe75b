import { Type } from 'typebox';
import { preflightSchema } from '../openapi.js';
import { APP_NOT_FOUND, problem, UNAUTHENTICATED, UNAVAILABLE } from '../schemas.js';

/**
 * Forward authentication for reverse proxies: the schema of each route of `forward-auth.ts`, from
 * which Fastify validates its requests, serializes its answers and types its handlers, and from
 * which docs/openapi.json is generated (`../openapi.ts`). Its errors are documented here and
 * answered by `../errors.ts`.
 */

/** The headers a proxy passes on: the original request's URI and method, and its client's address. */
const ORIGINAL_REQUEST = Type.Object({
  'X-Original-URI': Type.Optional(
    Type.String({
      description:
        'The original request URI (`/api/apps/{appId}/…`, query allowed), as nginx `auth_request` sends it. Takes precedence over `X-Forwarded-Uri` and over the path after `/api/forward-auth`.',
    }),
  ),
  'X-Forwarded-Uri': Type.Optional(Type.String({ description: 'The original request URI, as Traefik ForwardAuth sends it.' })),
  'X-Original-Method': Type.Optional(
    Type.String({
      description:
        'The original request method (any case). Takes precedence over `X-Forwarded-Method`; absent both, the method of this request.',
    }),
  ),
  'X-Forwarded-Method': Type.Optional(Type.String({ description: 'The original request method, as Traefik sends it.' })),
  'X-Forwarded-For': Type.Optional(
    Type.String({ description: 'Its last entry is recorded as the client address of a `token.refused` event; absent, the TCP peer.' }),
  ),
});

/** The answers of forward authentication, admitted or not. */
const ADMITTED = {
  200: {
    description: 'Admitted. No body; the identity is in the headers.',
    headers: {
      'X-Tessera-App-Id': { description: 'The AppID.', type: 'string' },
      'X-Tessera-Principal': { description: 'The principal.', type: 'string', enum: ['admin', 'anonymous'] },
      'X-Tessera-Principal-Id': { description: "`ANONYMOUS`, or the app's admin id.", type: 'string' },
      'X-Tessera-Auth': { description: 'How the request authenticated.', type: 'string', enum: ['basic', 'bearer'] },
      'X-Tessera-Expires-At': {
        description: 'When the bearer token expires (UNIX ms, decimal); absent for Basic or a token that never expires.',
        type: 'string',
        pattern: '^[0-9]+$',
      },
      'X-Tessera-Scope': {
        description:
          'Only for an admin token with scopes (issued from a credential, or asked for with `scope`): its scopes, separated by spaces. Absent for every other principal. The proxy must set or remove it like the other `X-Tessera-*` headers.',
        type: 'string',
      },
      'X-Tessera-Attestation-Provider': {
        description:
          'Only for an anonymous token issued with an attestation: its provider (`pow`, `apple`, `android`, `debug`). Absent for every other principal, Basic anonymous access included. The proxy must set or remove it like the other `X-Tessera-*` headers.',
        type: 'string',
        enum: ['pow', 'apple', 'android', 'debug'],
      },
      'Cache-Control': { type: 'string', const: 'no-store' },
    },
    type: 'null',
  },
};

const REFUSED = {
  400: problem(
    'No original URI, one that is not under `/api/apps/{appId}` or that an upstream could read two ways; a header read here sent twice; or an admin token on a path with a `me` segment. Possible codes: invalid_request, ME_NOT_ALLOWED_FOR_ADMIN.',
  ),
  401: UNAUTHENTICATED,
  403: problem('A path prefix of `FORWARD_AUTH_ADMIN_PATHS` without an admin token. Possible codes: ADMIN_REQUIRED.'),
  404: APP_NOT_FOUND,
  503: UNAVAILABLE,
};

/** A preflight's refusal when the original request is not one of an app's. */
const PREFLIGHT_REFUSED = {
  400: problem(
    'No original URI, or one that is not under `/api/apps/{appId}/` or could be read two ways. Possible codes: invalid_request.',
  ),
};

/** GET /api/forward-auth */
export const forwardAuth = {
  tags: ['authentication'],
  operationId: 'forwardAuth',
  summary: 'Forward authentication (original URI in a header)',
  description:
    'For reverse proxies (nginx `auth_request`, Traefik ForwardAuth, Envoy `ext_authz`). Every method is answered alike; a request body is ignored. The proxy forwards the original `Authorization` header, which is authenticated as on `/api/apps/{appId}/…` for the app the original URI names. The URI is not normalized: one an upstream could read two ways (dot segments, needless or ambiguous percent-encoding, `;` parameters, control characters, empty segments) is refused with 400. The `/me` rule applies (in any case), and on path prefixes listed in `FORWARD_AUTH_ADMIN_PATHS` (optionally per method; case-insensitive; a GET rule covers HEAD) only an admin token is admitted. The original URI comes from `X-Original-URI` or `X-Forwarded-Uri`.',
  security: [{ basicAppId: [] }, { sdkAppId: [], sdkAppKey: [] }, { bearer: [] }],
  headers: ORIGINAL_REQUEST,
  response: ADMITTED,
  errors: REFUSED,
};

/** OPTIONS /api/forward-auth */
export const preflightForwardAuth = preflightSchema({
  operationId: 'preflightForwardAuth',
  summary: 'CORS preflight of a request behind the proxy',
  description:
    "A CORS preflight of the original request (`X-Original-URI` or `X-Forwarded-Uri`, or the path after the prefix), which a proxy sends here instead of forwarding it (docs/forward-auth.md): answered from that app's `allowedOrigins`, allowing the request headers the preflight asks for. Not an authentication: no `X-Tessera-*` header.",
  errors: PREFLIGHT_REFUSED,
});

/** GET /api/forward-auth/{path} */
export const forwardAuthByPath = {
  tags: ['authentication'],
  operationId: 'forwardAuthByPath',
  summary: 'Forward authentication (original URI as the path, Envoy `path_prefix`)',
  description:
    'For reverse proxies (nginx `auth_request`, Traefik ForwardAuth, Envoy `ext_authz`). Every method is answered alike; a request body is ignored. The proxy forwards the original `Authorization` header, which is authenticated as on `/api/apps/{appId}/…` for the app the original URI names. The URI is not normalized: one an upstream could read two ways (dot segments, needless or ambiguous percent-encoding, `;` parameters, control characters, empty segments) is refused with 400. The `/me` rule applies (in any case), and on path prefixes listed in `FORWARD_AUTH_ADMIN_PATHS` (optionally per method; case-insensitive; a GET rule covers HEAD) only an admin token is admitted. The original URI is the path after `/api/forward-auth`, unless `X-Original-URI` or `X-Forwarded-Uri` is sent.',
  security: [{ basicAppId: [] }, { sdkAppId: [], sdkAppKey: [] }, { bearer: [] }],
  // Fastify names the rest of the path `*`; the document, `{path}`.
  params: Type.Object({
    '*': Type.String({
      description:
        "The original request path without its leading slash (`api/apps/{appId}/…`); the original query string is this request's query string.",
    }),
  }),
  headers: ORIGINAL_REQUEST,
  response: ADMITTED,
  errors: REFUSED,
};

/** OPTIONS /api/forward-auth/{path} */
export const preflightForwardAuthByPath = preflightSchema({
  operationId: 'preflightForwardAuthByPath',
  summary: 'CORS preflight of a request behind the proxy (Envoy style)',
  description:
    "A CORS preflight of the original request (`X-Original-URI` or `X-Forwarded-Uri`, or the path after the prefix), which a proxy sends here instead of forwarding it (docs/forward-auth.md): answered from that app's `allowedOrigins`, allowing the request headers the preflight asks for. Not an authentication: no `X-Tessera-*` header.",
  errors: PREFLIGHT_REFUSED,
});
