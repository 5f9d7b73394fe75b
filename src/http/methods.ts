import type { FastifyInstance } from 'fastify';
import { TesseraError } from '../errors.js';

/** Answers every method but `allowed` on `url` with `405` and `Allow`. HEAD goes with GET, in `Allow` too. */
export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const allow = allowed.flatMap((method) => (method === 'GET' ? ['GET', 'HEAD'] : [method]));
  app.route({
    method: app.supportedMethods.filter((method) => !allow.includes(method)),
    url,
    handler: async () => {
      throw new TesseraError('METHOD_NOT_ALLOWED', `Only ${allowed.join(', ')} ${allowed.length > 1 ? 'are' : 'is'} allowed here.`, {
        allow,
      });
    },
  });
}
