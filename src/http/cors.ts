import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { isOriginAllowed } from 'tessera-tokens/internal/apps/origins.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { FORWARD_AUTH_PATH, PORTAL_PREFIX, SDK_TOKEN_PATH } from './paths.js';
import { forwardedTarget } from './routes/forward-auth.js';

// The lists below are the headers' values, written once: `@fastify/cors` would join an array again
// for every request with `Origin`.

/** Methods a page may send: the API's, and those of the rest of the backend behind forward authentication. */
const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/**
 * Request headers the API reads: Authorization, Content-Type, those of deployed SDK clients,
 * `X-Request-Id`, the page's own id for the request (taken when short and safe, src/http/request-id.ts),
 * and W3C Trace Context's, which a page traced with OpenTelemetry's web instrumentations sends.
 */
const REQUEST_HEADERS =
  'Authorization, Content-Type, X-Kii-AppID, X-Kii-AppKey, X-Kii-SDK, X-Request-Id, X-Tessera-Attestation, traceparent, tracestate';
/**
 * What a page must read of an answer besides its status and body: the challenge of a 401, the wait
 * of a 429 or 503, and the request's id, which a web app reports with a problem (the `reqId` of the
 * service's log lines).
 */
const EXPOSED_HEADERS = 'WWW-Authenticate, Retry-After, X-Request-Id';
/** How long a browser may keep a preflight's answer: Chromium's ceiling. An origin removed from the list loses the answers at once anyway. */
const MAX_AGE_SECONDS = 7200;

/**
 * The developer portal's pages (`/portal/apps/{appId}/…` among them) are the service's own, for its
 * own origin only: another origin's page may read none of them, whatever the app lists.
 */
const PORTAL_PAGES = `${PORTAL_PREFIX}/`;

/** What `@fastify/cors` does for a request of an origin that may not read the answer: nothing (no header but `Vary: Origin`). */
const NO_CORS: FastifyCorsOptions = Object.freeze({ origin: false });

/** Where a request with `Origin` goes, as far as CORS is concerned. */
type CorsTarget =
  /** An app's path (`/api/apps/{appId}/…`), the SDK token path with `X-Kii-AppID`, or forward authentication of an app's path. */
  | { appId: string; forwarded: boolean }
  /** The SDK token path without `X-Kii-AppID`: a preflight, which never names the app. */
  | 'unnamed app'
  /** Anything else: `/healthz`, `/openapi.json`, the portal, … */
  | 'not for browsers';

/**
 * CORS for each app's `allowedOrigins`, with `@fastify/cors`: a request whose `Origin` the app lists
 * gets `Access-Control-Allow-Origin` (that origin, with `Vary: Origin`) and
 * `Access-Control-Expose-Headers` on every answer, errors included, and its preflight is answered
 * `204` before authentication. A preflight from an origin the app does not list is `403
 * ORIGIN_NOT_ALLOWED`; any other request from it is served as before, with no CORS header, so the
 * page cannot read the answer. Never `Access-Control-Allow-Credentials`: no cookie is involved.
 * The app is the path's, `X-Kii-AppID`'s on the SDK token path, or that of the URI forward
 * authentication is asked about (so that a proxy can pass CORS on, docs/forward-auth.md). A
 * preflight of the SDK token path cannot name its app (a preflight carries header names, not
 * values): it is answered for any origin, and the answer itself only to the app's origins.
 * The developer portal is not an API: it gets no CORS header.
 * docs/decisions.md ("Browser apps").
 */
const corsForApps: FastifyPluginAsync<{ apps: AppCache }> = async (app, { apps }) => {
  const delegator = (request: FastifyRequest, callback: (error: Error | null, options?: FastifyCorsOptions) => void): void => {
    const origin = request.headers.origin!;
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
    // An error refuses a preflight; any other request goes on without CORS, and its route answers.
    const fail = (error: unknown) => (preflight ? callback(error as Error) : callback(null, NO_CORS));
    let target: CorsTarget;
    try {
      target = targetOf(request);
    } catch (error) {
      return fail(error);
    }
    if (target === 'not for browsers') return callback(null, NO_CORS);
    if (target === 'unnamed app') return callback(null, preflight ? allowed(origin, true, false) : NO_CORS);
    const decide = (record: AppRecord) => {
      if (isOriginAllowed(record.configuration.allowedOrigins, origin)) callback(null, allowed(origin, preflight, target.forwarded));
      else if (preflight) callback(new TesseraError('ORIGIN_NOT_ALLOWED', "This origin is not in the app's allowedOrigins."));
      else callback(null, NO_CORS);
    };
    let record: ReturnType<AppCache['require']>;
    try {
      record = apps.require(target.appId);
    } catch (error) {
      return fail(error);
    }
    if (record instanceof Promise) record.then(decide, fail);
    else decide(record);
  };
  await registerForRequestsWithOrigin(app, { delegator });
};

export const browserAccess = fastifyPlugin(corsForApps, { name: 'tessera-browser-access', fastify: '5.x' });

function targetOf(request: FastifyRequest): CorsTarget {
  const route = request.routeOptions.url;
  if (route !== undefined && route.startsWith(PORTAL_PAGES)) return 'not for browsers';
  const appId = (request.params as { appId?: string } | undefined)?.appId;
  if (appId !== undefined) return { appId, forwarded: false };
  if (route === SDK_TOKEN_PATH) {
    const named = request.headers['x-kii-appid'];
    return typeof named === 'string' ? { appId: named, forwarded: false } : 'unnamed app';
  }
  if (route !== undefined && route.startsWith(FORWARD_AUTH_PATH)) return { appId: forwardedTarget(request).appId, forwarded: true };
  return 'not for browsers';
}

/**
 * The answer for an origin that may read it. Behind forward authentication the rest of the backend
 * may read request headers Tessera does not know of: its preflights allow what they ask for.
 */
function allowed(origin: string, preflight: boolean, forwarded: boolean): FastifyCorsOptions {
  return {
    origin,
    credentials: false,
    exposedHeaders: EXPOSED_HEADERS,
    methods: METHODS,
    ...(forwarded ? {} : { allowedHeaders: REQUEST_HEADERS }),
    maxAge: MAX_AGE_SECONDS,
    preflight,
    strictPreflight: false,
  };
}

/**
 * Registers `@fastify/cors` so that its hook runs only for requests that carry `Origin`. The plugin
 * adds one `onRequest` hook for every request, which (with a delegator) builds its options twice,
 * reads `request.routeOptions` (a new object) and sets `Vary` even when there is nothing to do;
 * server-side clients, which make every hot path, send no `Origin` and have nothing to gain.
 * Browsers send `Origin` with every cross-origin request and every preflight, so they lose
 * nothing.
 */
async function registerForRequestsWithOrigin(app: FastifyInstance, options: FastifyCorsOptions): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- unbound on purpose: it runs with the `this` of the instance that calls it, and is put back as it was.
  const addHook = app.addHook;
  const add = addHook as unknown as (this: FastifyInstance, name: string, hook: Hook) => FastifyInstance;
  app.addHook = function (this: FastifyInstance, name: string, hook: Hook) {
    return add.call(this, name, name === 'onRequest' ? onlyWithOrigin(hook) : hook);
  } as unknown as FastifyInstance['addHook'];
  try {
    await app.register(cors, options);
  } finally {
    app.addHook = addHook;
  }
}

type Hook = (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

function onlyWithOrigin(hook: Hook): Hook {
  return function (request, reply, done) {
    if (request.headers.origin === undefined) done();
    else hook.call(this, request, reply, done);
  };
}
