import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { TesseraError } from '../errors.js';

/**
 * A header's value, undefined when it is absent or empty; `400 invalid_request` when it is sent more
 * than once. Node joins the repeats of most headers with ", " and keeps only the first
 * `Authorization`, so a repeated header would be read one way here and maybe another way by a proxy
 * or an upstream. `name` is lower case.
 */
export function singleHeader(request: IncomingMessage, name: string): string | undefined {
  return singleRawHeader(request.rawHeaders, name);
}

/** `singleHeader` over Node's `rawHeaders` (name, value, name, value, …). */
export function singleRawHeader(raw: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let index = 0; index < raw.length; index += 2) {
    const header = raw[index]!;
    if (header.length !== name.length || header.toLowerCase() !== name) continue;
    if (value !== undefined) throw new TesseraError('invalid_request', `The ${header} header is sent more than once.`);
    value = raw[index + 1]!;
  }
  return value === '' ? undefined : value;
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
