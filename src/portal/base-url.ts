import type { FastifyRequest } from 'fastify';

/**
 * Where the portal's pages say the service is, in the commands, links and code they show:
 * `PUBLIC_URL` when it is set, else the address the browser used to reach the portal (so that a
 * developer on `http://localhost:8080` gets code that works on that laptop).
 */
export function serviceBaseUrl(request: FastifyRequest, publicUrl: string | undefined): string {
  return publicUrl ?? `${request.protocol}://${request.host}`;
}
