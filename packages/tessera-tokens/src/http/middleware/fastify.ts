import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { RequestAuthenticator } from '../../auth/authenticate.js';
import { checkedRequiredScope, scopeRefusal } from '../../auth/required-scope.js';
import { adminRequired } from '../../error-catalogue.js';
import type { Principal } from '../../principal.js';
import { sendError } from '../errors.js';
import { singleHeader } from '../headers.js';
import { authenticationStep } from './step.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request of the scope `tesseraAuth` is registered in. */
    principal: Principal;
  }
}

export interface TesseraAuthOptions {
  /** Tessera's own `Authenticator`, or a `TesseraVerifier` or `TesseraJwtVerifier` in another service. */
  authenticator: RequestAuthenticator;
  /** Where the AppID comes from; by default the route parameter `appId`. */
  appIdOf?: (request: FastifyRequest) => string | undefined;
}

const appIdParameter = (request: FastifyRequest) => (request.params as { appId?: string } | undefined)?.appId;

const authenticateScope: FastifyPluginCallback<TesseraAuthOptions> = (app, options, done) => {
  const appIdOf = options.appIdOf ?? appIdParameter;
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook(
    'onRequest',
    authenticationStep<FastifyRequest, FastifyReply, HookHandlerDoneFunction>(options.authenticator, {
      describe: (request) => ({
        appId: appIdOf(request) ?? '',
        authorization: singleHeader(request.raw, 'authorization'),
        rawHeaders: request.raw.rawHeaders,
        path: request.url,
        clientAddress: request.ip,
      }),
      accept: (request, principal, next) => {
        request.principal = principal;
        next();
      },
      refuse: (reply, error) => {
        sendError(reply, error);
      },
      fail: (next, error) => next(error as Error),
    }),
  );
  done();
};

/**
 * Authenticates every request of the scope it is registered in, before its body is read, and puts
 * the principal on `request.principal`; answers the contract's error otherwise. Tessera's own
 * routes use it; so can another Fastify service, with a `TesseraVerifier` or a `TesseraJwtVerifier`
 * (see docs/middleware.md).
 * A plugin of `fastify-plugin`: the hook applies to the scope that registers it, not to a child of
 * its own, and registering it with another major version of Fastify fails at once.
 */
export const tesseraAuth = fastifyPlugin(authenticateScope, { name: 'tessera-auth', fastify: '5.x' });

/** Route hook for admin features: anything but an admin token gets `403 ADMIN_REQUIRED`. */
export function requireAdmin(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (request.principal.kind === 'admin') {
    done();
    return;
  }
  sendError(reply, adminRequired());
}

/**
 * Route hook for a feature that needs `scope`: an admin token of the app's own ClientID passes, one
 * issued from a credential only if its scopes include `scope` (`403 INSUFFICIENT_SCOPE`); anything
 * else gets `403 ADMIN_REQUIRED`.
 */
export function requireScope(scope: string): (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void {
  const required = checkedRequiredScope(scope);
  return (request, reply, done) => {
    const refusal = scopeRefusal(request.principal, required);
    if (refusal === undefined) done();
    else sendError(reply, refusal);
  };
}
