import { createServer, METHODS, type IncomingMessage, type ServerOptions as HttpServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyPluginCallback, type FastifyServerFactory } from 'fastify';
import type { Logger } from 'pino';
import type { AdminPathRule } from './auth/forward.js';
import { notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { batchAnswers } from './http/answer-batching.js';
import { answerConnectRequests } from './http/connect.js';
import { acceptJsonBodies } from './http/content-types.js';
import { browserAccess } from './http/cors.js';
import { answeredDetailOf, logAnsweredError } from './http/error-log.js';
import { errorBody, schemaRefusal, sendError, toTesseraError } from 'tessera-tokens/internal/http/errors.js';
import { keepForwardedAddressesOnly } from './http/forwarded-for.js';
import { refuseOtherMethods } from './http/methods.js';
import { REQUEST_ID_HEADER, requestIdOf } from './http/request-id.js';
import { tesseraAuth } from 'tessera-tokens/internal/http/middleware/fastify.js';
import { PORTAL_PREFIX } from './http/paths.js';
import { generateOpenApiDocument } from './http/openapi.js';
import { SHARED_SCHEMAS } from './http/schemas.js';
import { appRoutes } from './http/routes/app.js';
import { attestationChallengeRoute, debugTokenRoutes } from './http/routes/attestation.js';
import { tokenLifecycleRoutes } from './http/routes/app-tokens.js';
import { clientScriptRoute } from './http/routes/client-script.js';
import { credentialRoutes } from './http/routes/credentials.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { eventRoutes } from './http/routes/events.js';
import { forwardAuthRoutes } from './http/routes/forward-auth.js';
import { healthRoutes } from './http/routes/health.js';
import { metadataRoutes } from './http/routes/metadata.js';
import { jwtRoutes } from './http/routes/jwt.js';
import { publicBaseUrl } from './http/public-url.js';
import { openapiRoute } from './http/routes/openapi.js';
import { endpointRoutes } from './http/routes/revocation-introspection.js';
import { tokenRoutes } from './http/routes/token-endpoint.js';
import { authRoutes } from './http/routes/whoami.js';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './http/timeouts.js';
import { portal } from './portal/plugin.js';
import type { Tessera } from './tessera.js';

/** Token requests are a few hundred bytes; nothing the service accepts needs more. */
export const MAX_BODY_BYTES = 4096;

export interface ServerOptions {
  tessera: Tessera;
  logger?: Logger;
  /** One log line per request (off by default: logging is not free on the hot path). */
  logRequests?: boolean;
  /** Admin-only path prefixes for forward authentication (FORWARD_AUTH_ADMIN_PATHS). */
  forwardAuthAdminPaths?: readonly AdminPathRule[];
  /** Proxies whose `X-Forwarded-For` gives the client address (TRUSTED_PROXIES); none by default. */
  trustedProxies?: readonly string[];
  timeouts?: HttpTimeouts;
  /** Where clients reach the service (PUBLIC_URL), the base of OAuth metadata; see `publicBaseUrl`. */
  publicUrl?: string;
  /** The developer portal at `/portal/` (on by default). */
  portal?: boolean;
  /** PORTAL_SIGNUP: whether anyone may make a portal account (`open`) or only the operator (`invite`, the default). */
  portalSignup?: 'open' | 'invite';
  /** OpenTelemetry's instrumentation of the requests (the `OTEL_*` variables; `src/tracing/`), when tracing is on. */
  tracing?: RequestTracing;
  /**
   * Called first on the new instance, before any route is added: how docs/openapi.json is generated
   * (`src/http/openapi.ts` registers `@fastify/swagger` there). Never set when serving.
   */
  document?: (app: FastifyInstance) => void;
}

/** How requests are traced: what `src/tracing/` gives the server. */
export interface RequestTracing {
  /** `@fastify/otel`'s plugin, which makes each request's span. */
  plugin: FastifyPluginCallback;
  /**
   * Whether a request is traced, decided as it arrives, from its headers; undefined when only the
   * SDK can tell (its propagators are not W3C's), and then every request goes through the plugin.
   */
  sampled?: (request: IncomingMessage) => boolean;
  /** Told of each request `sampled` chose, as it is handed to the instance that traces it. */
  traced?: (response: ServerResponse) => void;
}

/**
 * The server. With tracing whose decision is made as a request arrives, two instances of the same
 * routes over the same services: the one that listens, and a twin with `@fastify/otel`, which is
 * handed the requests to trace. `@fastify/otel`'s hooks cost every request they see, traced or not
 * (a span not recorded, the context entered, timings of the answer): 44 % of a token check's CPU
 * at 1 % sampling, three times what the twin costs (docs/benchmarks.md, "Tracing and request ids").
 * Requests not traced pay one decision instead.
 * The twin is as another instance behind the same load balancer would be: nothing a request
 * needs is held by an instance of Fastify rather than by the services or the client.
 */
export function buildServer(options: ServerOptions): FastifyInstance {
  const { tracing, timeouts = DEFAULT_HTTP_TIMEOUTS } = options;
  if (tracing?.sampled === undefined) return buildApp(options, { instrument: tracing?.plugin });
  const { sampled, traced: onTraced } = tracing;
  let tracedHandler: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  const traced = buildApp(options, {
    instrument: tracing.plugin,
    // The twin never listens: its handler is called by the server below.
    serverFactory: (handler) => {
      tracedHandler = handler;
      return createServer();
    },
  });
  let draining = false;
  const app = buildApp(options, {
    // As Fastify makes its server, with the twin's handler for the requests traced.
    serverFactory: (handler) => {
      const server = createServer(httpOptions(timeouts), (request, response) => {
        // While draining, every request gets the listening instance's `Connection: close`.
        if (!draining && tracedHandler !== undefined && sampled(request)) {
          onTraced?.(response);
          tracedHandler(request, response);
        } else handler(request, response);
      });
      // What Fastify sets on a server it makes (fastify/lib/server.js) from the options buildApp gives it.
      server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
      server.requestTimeout = timeouts.requestTimeoutMs;
      server.setTimeout(connectionTimeoutMs(timeouts));
      return server;
    },
  });
  app.addHook('onReady', async () => {
    await traced.ready();
  });
  app.addHook('preClose', (done) => {
    draining = true;
    done();
  });
  app.addHook('onClose', async () => {
    await traced.close();
  });
  return app;
}

interface Twin {
  /** Registered before anything else. */
  instrument?: FastifyPluginCallback | undefined;
  serverFactory?: FastifyServerFactory;
}

function buildApp(
  {
    tessera,
    logger,
    logRequests = false,
    forwardAuthAdminPaths = [],
    trustedProxies = [],
    timeouts = DEFAULT_HTTP_TIMEOUTS,
    publicUrl,
    portal: withPortal = true,
    portalSignup = 'invite',
    document,
  }: ServerOptions,
  { instrument, serverFactory }: Twin,
): FastifyInstance {
  // Fastify gets no logger: carrying one costs every request a few microseconds even when nothing
  // is logged. The service logs through its own: start and stop, failed requests, and (when asked)
  // one line per request.
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_BODY_BYTES,
    routerOptions: { maxParamLength: 256 },
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    connectionTimeout: connectionTimeoutMs(timeouts),
    ...(trustedProxies.length > 0 ? { trustProxy: [...trustedProxies] } : {}),
    // While draining after SIGTERM, a request arriving on an open connection is still served rather
    // than refused: the client loses nothing, and `Connection: close` (Fastify adds it) sends its
    // next request to another instance.
    return503OnClosing: false,
    // X-Request-Id is read by requestIdOf, which checks it, rather than taken as it comes.
    requestIdHeader: false,
    genReqId: requestIdOf,
    clientErrorHandler: answerClientError,
    // Each route's schema (src/http/routes/*.schema.ts) is checked as written: no value converted to
    // the type it should have (a JSON body's `"5"` is not 5), none added (defaults) or removed (an
    // unknown field is refused where the schema says so), and a refusal names the first problem only,
    // in the contract's shape (`schemaRefusal`; `verbose` gives it the schema's `x-` keywords).
    ajv: {
      customOptions: {
        coerceTypes: false,
        useDefaults: false,
        removeAdditional: false,
        verbose: true,
        keywords: ['x-error-code', 'x-field-name'],
      },
    },
    schemaErrorFormatter: schemaRefusal,
    frameworkErrors: (error, request, reply) => {
      reply.header(REQUEST_ID_HEADER, request.id);
      const answered = toTesseraError(error);
      logAnsweredError(logger, request, error, answered);
      sendError(reply, answered);
    },
    http: httpOptions(timeouts),
    ...(serverFactory === undefined ? {} : { serverFactory }),
  }) as unknown as FastifyInstance;
  // At once, as @fastify/otel registers itself when asked to: its hooks come first, and it sees every route added.
  instrument?.(app, {}, () => {});
  document?.(app);
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);

  if (trustedProxies.length > 0) keepForwardedAddressesOnly(app);

  // Route every method Node parses, so that an exotic one gets 405 or 404 in the contract's shape.
  // CONNECT reaches the routes only through answerConnectRequests.
  for (const method of METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: method !== 'CONNECT' });
  }
  answerConnectRequests(app);
  batchAnswers(app, tessera.metrics.requestDurations);
  app.addHook('onRequest', (request, reply, done) => {
    // Set first, in the hook every request runs: every answer carries it, errors and 404s too.
    reply.header(REQUEST_ID_HEADER, request.id);
    const encoding = request.headers['content-encoding'];
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(new TesseraError('invalid_request', 'HTTP/1.1 requests need a Host header.'));
    } else if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      // A compressed body would otherwise be read as if it were plain (RFC 9110 §8.4.1: 415).
      done(new TesseraError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must not be compressed (Content-Encoding).'));
    } else {
      done();
    }
  });
  // Node answers an unknown `Expect` with an empty 417; answer it in the contract's shape instead.
  app.server.on('checkExpectation', (_request, response) => {
    const body = errorBody(new TesseraError('invalid_request', 'Only "Expect: 100-continue" is supported.'));
    response.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });

  // Only JSON at the root; the token endpoint adds its own types.
  app.removeContentTypeParser('text/plain');
  acceptJsonBodies(app);

  app.setErrorHandler((error, request, reply) => {
    const tesseraError = toTesseraError(error);
    logAnsweredError(logger, request, error, tesseraError);
    return sendError(reply, tesseraError);
  });
  if (logger !== undefined && logRequests) {
    app.addHook('onResponse', (request, reply, done) => {
      const detail = answeredDetailOf(request);
      logger.info(
        {
          reqId: request.id,
          req: request,
          statusCode: reply.statusCode,
          responseTimeMs: Number(reply.elapsedTime.toFixed(2)),
          ...(detail === undefined ? {} : { detail }),
        },
        'request completed',
      );
      done();
    });
  }
  app.setNotFoundHandler((_request, reply) => sendError(reply, notFound()));

  // Before every route, so that its hook runs ahead of authentication: preflights carry no credentials.
  app.register(browserAccess, { apps: tessera.appCache });
  app.register(healthRoutes, { store: tessera.store });
  app.register(clientScriptRoute);
  const { appCache: apps, authenticator } = tessera;
  app.register(tokenRoutes, { apps, issuer: tessera.issuer, limits: tessera.limits });
  app.register(attestationChallengeRoute, { apps, attestation: tessera.attestation, limits: tessera.limits, clock: tessera.clock });
  app.register(metadataRoutes, { apps, publicUrl });
  app.register(jwtRoutes, { apps, jwt: tessera.jwt, publicUrl });
  // A JWT's issuer is the URL clients reach the service at: PUBLIC_URL, or the loopback address it listens on.
  app.addHook('onListen', async () => tessera.jwt.issuer.useBaseUrl(publicBaseUrl(publicUrl, app.server)));
  app.register(endpointRoutes, {
    apps,
    callers: tessera.callers,
    checker: tessera.checker,
    revoker: tessera.revoker,
    limits: tessera.limits,
    metrics: tessera.metrics,
  });
  app.register(forwardAuthRoutes, { authenticator, adminPaths: forwardAuthAdminPaths, metrics: tessera.metrics });
  app.register(async (authenticated) => {
    await authenticated.register(tesseraAuth, { authenticator });
    await authenticated.register(appRoutes, { apps, appService: tessera.apps });
    await authenticated.register(tokenLifecycleRoutes, { revoker: tessera.revoker });
    await authenticated.register(eventRoutes, { events: tessera.appEvents, clock: tessera.clock });
    await authenticated.register(credentialRoutes, { credentials: tessera.credentials });
    await authenticated.register(webhookRoutes, { webhooks: tessera.webhooks });
    await authenticated.register(debugTokenRoutes, { attestation: tessera.attestation });
    await authenticated.register(authRoutes);
  });

  if (withPortal) {
    app.register(portal, {
      prefix: PORTAL_PREFIX,
      developers: tessera.developers,
      sessions: tessera.developerSessions,
      members: tessera.members,
      ownedApps: tessera.ownedApps,
      apps: tessera.apps,
      revoker: tessera.revoker,
      events: tessera.appEvents,
      credentials: tessera.credentials,
      debugTokens: tessera.attestation.debugTokens,
      platforms: { playIntegrity: tessera.attestation.playIntegrity, appAttest: tessera.attestation.appAttest },
      webhooks: tessera.webhooks,
      clock: tessera.clock,
      secureCookies: publicUrl?.startsWith('https:') ?? false,
      publicUrl,
      signup: portalSignup,
      logger,
      alerts: tessera.mail?.alerts,
    });
    app.get('/', async (request, reply) => {
      // `GET *` (an asterisk-form target) is routed here too: it names no resource.
      if (!request.raw.url?.startsWith('/')) throw notFound();
      return reply.redirect(`${PORTAL_PREFIX}/`, 302);
    });
    refuseOtherMethods(app, '/', ['GET']);
  }

  app.register(openapiRoute);

  return app;
}

/**
 * docs/openapi.json, as the routes of a server over `tessera` describe it (`src/http/openapi.ts`):
 * what `npm run openapi` writes, and tests/http/openapi.test.ts compares with the file. The portal's
 * pages are no part of the API.
 */
export function openApiDocument(tessera: Tessera): Promise<string> {
  return generateOpenApiDocument((document) => buildServer({ tessera, portal: false, document }));
}

/** A socket with nothing happening on it for this long is closed, whatever its state. */
function connectionTimeoutMs(timeouts: HttpTimeouts): number {
  return timeouts.requestTimeoutMs + timeouts.keepAliveTimeoutMs;
}

function httpOptions(timeouts: HttpTimeouts): HttpServerOptions {
  return {
    // Node would answer a request without Host itself, with an empty body; buildApp's first hook does it.
    requireHostHeader: false,
    headersTimeout: timeouts.headersTimeoutMs,
    // How often Node looks for requests past their timeouts (its default, 30 s, would let a slow
    // client keep a connection long after its time is up).
    connectionsCheckingInterval: Math.min(1_000, timeouts.headersTimeoutMs),
  };
}

/** Malformed HTTP never reaches a route: answer it in the contract's shape and close. */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, tesseraError] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', new TesseraError('REQUEST_TOO_LARGE', 'The request headers are too large.')]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', new TesseraError('invalid_request', 'The request took too long to arrive.')]
        : [400, 'Bad Request', new TesseraError('invalid_request', 'The request is not valid HTTP.')];
  const body = errorBody(tesseraError);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
