import type { FastifyInstance, FastifyRequest } from 'fastify';

/** A header's value when it is sent once and is not empty; undefined otherwise. */
export function singleHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Every answer of the scope's routes, errors included, is marked not to be cached (RFC 6749 §5.1).
 * On send rather than on request, so that an answer given by an enclosing scope's hook (a 401 from
 * authentication) is marked too.
 */
export function preventCaching(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    done(null, payload);
  });
}
