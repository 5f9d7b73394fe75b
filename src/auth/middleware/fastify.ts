import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import { isTesseraError } from '../../errors.js';
import { sendError } from '../../http/errors.js';
import type { Principal } from '../../principal.js';
import type { Authenticator } from '../authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request of the scope the plugin is registered in. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** Marks a route as an admin feature: anything but an admin token gets `403 ADMIN_REQUIRED`. */
    adminOnly?: boolean;
  }
}

export interface TesseraAuthOptions {
  authenticator: Authenticator;
  /** Where the AppID comes from; by default the route parameter `appId`. */
  appIdOf?: (request: FastifyRequest) => string | undefined;
}

const appIdParameter = (request: FastifyRequest) => (request.params as { appId?: string } | undefined)?.appId;

/**
 * Authenticates every request of the scope it is registered in, before its body is read, and puts
 * the principal on `request.principal`; answers the contract's error otherwise.
 */
export const tesseraAuth: FastifyPluginCallback<TesseraAuthOptions> = (app, options, done) => {
  const appIdOf = options.appIdOf ?? appIdParameter;
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request, reply) => {
    try {
      request.principal = await options.authenticator.authenticate({
        appId: appIdOf(request) ?? '',
        authorization: request.headers.authorization,
        path: request.url,
        adminRequired: request.routeOptions.config.adminOnly === true,
      });
    } catch (error) {
      if (!isTesseraError(error)) throw error;
      return sendError(reply, error);
    }
  });
  done();
};

// Like fastify-plugin: the hook applies to the scope that registers the plugin, not to a child.
Object.assign(tesseraAuth, { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'tessera-auth' });
