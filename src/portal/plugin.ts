import { join } from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyHelmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { CurrentSession } from '../developers/sessions.js';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { acceptFormBodies } from '../http/content-types.js';
import { logAnsweredError } from '../http/error-log.js';
import { toTesseraError } from 'tessera-tokens/internal/http/errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { formField, type BackgroundRouteConfig, type PortalContext, type PortalOptions } from './context.js';
import { portalCookies } from './cookies.js';
import { errorPage } from './pages/error/views.js';
import { appPages } from './pages/app/routes.js';
import { appRotatePages } from './pages/app-rotate/routes.js';
import { appSettingsPages } from './pages/app-settings/routes.js';
import { attestationPages } from './pages/attestation/routes.js';
import { credentialsPages } from './pages/credentials/routes.js';
import { appsPages } from './pages/apps/routes.js';
import { eventsPages } from './pages/events/routes.js';
import { signInPages } from './pages/sign-in/routes.js';
import { accountPages } from './pages/account/routes.js';
import { invitationPages } from './pages/invitation/routes.js';
import { peoplePages } from './pages/people/routes.js';
import { setPasswordPages } from './pages/set-password/routes.js';
import { signUpPages } from './pages/sign-up/routes.js';
import { forgotPasswordPages } from './pages/forgot-password/routes.js';
import { confirmEmailPages } from './pages/confirm-email/routes.js';
import { webhooksPages } from './pages/webhooks/routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The portal's session of this request, if it has a working one. */
    portalSession: CurrentSession | null;
    /** Whether its pages ask the developer signed in to confirm their address (mail is sent, and it is not confirmed). */
    portalConfirmEmail: boolean;
  }
}

function isBackground(request: FastifyRequest): boolean {
  return (request.routeOptions.config as BackgroundRouteConfig).background === true;
}

const ASSETS = join(PACKAGE_ROOT, 'assets', 'portal');

/**
 * The developer portal, under `/portal/`: server-rendered pages, each form a plain HTML form that
 * works without JavaScript; one stylesheet and one small module that only enhances. Encapsulated:
 * its cookies, CSRF check, security headers and session lookup run for `/portal/` only, so the
 * token paths pay nothing for it. docs/portal.md.
 */
export const portal: FastifyPluginAsync<PortalOptions> = async (app, options) => {
  const {
    developers,
    sessions,
    members,
    ownedApps,
    apps,
    revoker,
    events,
    credentials,
    debugTokens,
    platforms,
    webhooks,
    clock,
    secureCookies,
    publicUrl,
    signup = 'invite',
    logger,
    alerts,
  } = options;
  const context: PortalContext = {
    ...{
      developers,
      sessions,
      members,
      ownedApps,
      apps,
      revoker,
      events,
      credentials,
      debugTokens,
      platforms,
      webhooks,
      clock,
      secureCookies,
      publicUrl,
      signup,
      alerts,
    },
    cookies: portalCookies(secureCookies),
  };
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    // No page of the portal is meant to be opened by another site, nor its answers read.
    crossOriginResourcePolicy: { policy: 'same-origin' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: options.secureCookies,
  });
  await app.register(fastifyStatic, { root: ASSETS, prefix: '/assets/', index: false, list: false, wildcard: false });
  await app.register(async (pages) => registerPages(pages, context, logger));
};

async function registerPages(app: FastifyInstance, context: PortalContext, logger: Logger | undefined): Promise<void> {
  const { cookies, sessions } = context;
  await app.register(fastifyCookie);
  await app.register(fastifyCsrf, {
    cookieKey: cookies.csrf.name,
    cookieOpts: cookies.csrf.options,
    getToken: (request) => formField(request, '_csrf'),
  });
  acceptFormBodies(app);
  app.decorateRequest('portalSession', null);
  app.decorateRequest('portalConfirmEmail', false);
  app.addHook('onRequest', async (request) => {
    const token = request.cookies[cookies.session.name];
    if (token !== undefined) request.portalSession = (await sessions.current(token, { background: isBackground(request) })) ?? null;
    request.portalConfirmEmail = context.developers.mails && request.portalSession?.developer.emailConfirmedAt === null;
  });
  app.addHook('onSend', async (_request, reply) => {
    // Pages show keys: no cache, no shared cache, no back-button copy.
    reply.header('cache-control', 'no-store');
  });
  app.setErrorHandler((error, request, reply) => {
    // Logged as the API's errors are: a 5xx at once, any other error's internal detail with the request's line.
    logAnsweredError(logger, request, error, toTesseraError(error));
    return sendErrorPage(error, request, reply);
  });
  app.setNotFoundHandler((request, reply) => sendErrorPage({ statusCode: 404 }, request, reply));

  await app.register(signInPages, context);
  await app.register(appsPages, context);
  await app.register(appPages, context);
  await app.register(appRotatePages, context);
  await app.register(appSettingsPages, context);
  await app.register(credentialsPages, context);
  await app.register(attestationPages, context);
  await app.register(eventsPages, context);
  await app.register(peoplePages, context);
  await app.register(invitationPages, context);
  await app.register(setPasswordPages, context);
  await app.register(accountPages, context);
  await app.register(signUpPages, context);
  await app.register(forgotPasswordPages, context);
  await app.register(confirmEmailPages, context);
  await app.register(webhooksPages, context);
}

function sendErrorPage(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const status = isTesseraError(error) ? error.status : statusOf(error);
  const message = isTesseraError(error) && status < 500 ? error.message : undefined;
  const page = errorPage({ developer: request.portalSession?.developer, csrfToken: reply.generateCsrf() }, status, message);
  return reply.status(status).type('text/html; charset=utf-8').send(page.text);
}

function statusOf(error: unknown): number {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}
