import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { singleRawHeader } from '../auth/raw-headers.js';

/**
 * A header's value, undefined when it is absent or empty; `400 invalid_request` when it is sent more
 * than once. Node joins the repeats of most headers with ", " and keeps only the first
 * `Authorization`, so a repeated header would be read one way here and maybe another way by a proxy
 * or an upstream. `name` is lower case.
 */
export function singleHeader(request: IncomingMessage, name: string): string | undefined {
  return singleRawHeader(request.rawHeaders, name);
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
