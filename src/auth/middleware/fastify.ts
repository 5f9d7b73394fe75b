import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { isTesseraError, TesseraError } from '../../errors.js';
import { sendError } from '../../http/errors.js';
import { singleHeader } from '../../http/headers.js';
import type { Principal } from '../../principal.js';
import type { RequestAuthenticator } from '../authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request of the scope `tesseraAuth` is registered in. */
    principal: Principal;
  }
}

export interface TesseraAuthOptions {
  /** Tessera's own `Authenticator`, or a `TesseraVerifier` in another service. */
  authenticator: RequestAuthenticator;
  /** Where the AppID comes from; by default the route parameter `appId`. */
  appIdOf?: (request: FastifyRequest) => string | undefined;
}

const appIdParameter = (request: FastifyRequest) => (request.params as { appId?: string } | undefined)?.appId;

/**
 * Authenticates every request of the scope it is registered in, before its body is read, and puts
 * the principal on `request.principal`; answers the contract's error otherwise. Tessera's own
 * routes use it; so can another Fastify service, with a `TesseraVerifier` (see docs/middleware.md).
 */
export const tesseraAuth: FastifyPluginCallback<TesseraAuthOptions> = (app, options, done) => {
  const appIdOf = options.appIdOf ?? appIdParameter;
  const { authenticator } = options;
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', (request, reply, next) => {
    const accept = (principal: Principal) => {
      request.principal = principal;
      next();
    };
    const refuse = (error: unknown) => (isTesseraError(error) ? sendError(reply, error) : next(error as Error));
    try {
      const principal = authenticator.authenticate({
        appId: appIdOf(request) ?? '',
        authorization: singleHeader(request.raw, 'authorization'),
        path: request.url,
        clientAddress: request.ip,
      });
      if (principal instanceof Promise) principal.then(accept, refuse);
      else accept(principal);
    } catch (error) {
      refuse(error);
    }
  });
  done();
};

// Like fastify-plugin: the hook applies to the scope that registers the plugin, not to a child.
Object.assign(tesseraAuth, { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'tessera-auth' });

/** Route hook for admin features: anything but an admin token gets `403 ADMIN_REQUIRED`. */
export function requireAdmin(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (request.principal.kind === 'admin') {
    done();
    return;
  }
  sendError(reply, new TesseraError('ADMIN_REQUIRED', 'This is an admin feature: it needs an app admin token.'));
}
