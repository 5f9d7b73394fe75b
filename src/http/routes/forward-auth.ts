import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from 'tessera-tokens/internal/auth/authenticate.js';
import { isAdminPath, resolveForwardedTarget, type AdminPathRule, type ForwardedTarget } from '../../auth/forward.js';
import { scopeParameter } from 'tessera-tokens/internal/credentials/scopes.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { ForwardAuthDecision, Metrics } from '../../metrics/port.js';
import { ignoreBodies } from '../content-types.js';
import { toTesseraError } from 'tessera-tokens/internal/http/errors.js';
import { singleHeader } from 'tessera-tokens/internal/http/headers.js';
import { routeEveryMethod } from '../methods.js';
import { FORWARD_AUTH_PATH } from '../paths.js';
import { forwardAuth, forwardAuthByPath, preflightForwardAuth, preflightForwardAuthByPath } from './forward-auth.schema.js';

/** Identity headers of an admitted request, for the proxy to pass to the upstream. */
export const IDENTITY_HEADERS = {
  appId: 'x-tessera-app-id',
  principal: 'x-tessera-principal',
  id: 'x-tessera-principal-id',
  auth: 'x-tessera-auth',
  expiresAt: 'x-tessera-expires-at',
  /** Only for an admin token with scopes (from a credential): its scopes, separated by spaces. */
  scope: 'x-tessera-scope',
  /** Only for an anonymous token issued with an attestation: its provider. */
  attestation: 'x-tessera-attestation-provider',
} as const;

/**
 * Forward authentication for reverse proxies (nginx `auth_request`, Traefik ForwardAuth, Envoy
 * ext_authz). The proxy sends the original request's `Authorization`, and its URI and method:
 * - in `X-Original-URI` / `X-Original-Method` (nginx) or `X-Forwarded-Uri` / `X-Forwarded-Method`
 *   (Traefik), to `/api/forward-auth`;
 * - or, as Envoy does with `path_prefix`, as the path after `/api/forward-auth` and the method of
 *   this request.
 * Answers `200` with identity headers and no body, or the contract's error. Where several of these
 * sources are present they must agree (`400 invalid_request` otherwise): a proxy sets one and may
 * pass the others on from the client.
 */
export const forwardAuthRoutes: FastifyPluginAsync<{
  authenticator: Authenticator;
  adminPaths: readonly AdminPathRule[];
  metrics: Pick<Metrics, 'forwardAuthDecided'>;
}> = async (app, { authenticator, adminPaths, metrics }) => {
  // Whatever body the proxy forwards is not needed.
  ignoreBodies(app);

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      await admit(request, reply);
      metrics.forwardAuthDecided('allowed');
      return reply;
    } catch (error) {
      metrics.forwardAuthDecided(decisionOf(error));
      throw error;
    }
  };

  const admit = async (request: FastifyRequest, reply: FastifyReply) => {
    const target = forwardedTarget(request);
    const methodHeaders = [singleHeader(request.raw, 'x-original-method'), singleHeader(request.raw, 'x-forwarded-method')];
    // Envoy sends the original method as this request's own; nginx and Traefik send their own.
    const envoy = pathAfterPrefix(request.url) !== undefined;
    const method = agreed('method', envoy ? [...methodHeaders, request.method] : methodHeaders) ?? request.method;
    const principal = await authenticator.authenticate({
      appId: target.appId,
      authorization: singleHeader(request.raw, 'authorization'),
      rawHeaders: request.raw.rawHeaders,
      path: target.path,
      adminRequired: isAdminPath(adminPaths, method, target.segments),
      clientAddress: request.ip,
    });
    reply
      .header('cache-control', 'no-store')
      .header(IDENTITY_HEADERS.appId, principal.appId)
      .header(IDENTITY_HEADERS.principal, principal.kind)
      .header(IDENTITY_HEADERS.id, principal.id)
      .header(IDENTITY_HEADERS.auth, principal.auth);
    if (principal.expiresAt !== null) reply.header(IDENTITY_HEADERS.expiresAt, String(principal.expiresAt));
    if (principal.scopes !== null) reply.header(IDENTITY_HEADERS.scope, scopeParameter(principal.scopes));
    if (principal.attestation !== undefined) reply.header(IDENTITY_HEADERS.attestation, principal.attestation);
    reply.code(200).send();
  };

  routeEveryMethod(app, FORWARD_AUTH_PATH, handler, { GET: forwardAuth, OPTIONS: preflightForwardAuth });
  routeEveryMethod(app, `${FORWARD_AUTH_PATH}/*`, handler, { GET: forwardAuthByPath, OPTIONS: preflightForwardAuthByPath });
};

/**
 * The app and path of the original request that a forward-authentication request asks about, from
 * whichever source the proxy used; `400 invalid_request` when there is none, or they disagree.
 */
export function forwardedTarget(request: FastifyRequest): ForwardedTarget {
  const uri = agreed('URI', [
    singleHeader(request.raw, 'x-original-uri'),
    singleHeader(request.raw, 'x-forwarded-uri'),
    pathAfterPrefix(request.url),
  ]);
  if (uri === undefined) {
    throw new TesseraError('invalid_request', 'Send the original request URI in X-Original-URI or X-Forwarded-Uri.');
  }
  return resolveForwardedTarget(uri);
}

/**
 * The one value the given sources agree on. A proxy sets one of them and may pass the others on from
 * the client: if they differ, a client is trying to have another URI checked than the one it asks for.
 */
function agreed(what: string, candidates: (string | undefined)[]): string | undefined {
  const present = candidates.filter((candidate): candidate is string => candidate !== undefined);
  if (present.some((candidate) => candidate !== present[0])) {
    throw new TesseraError('invalid_request', `The original request's ${what} is given twice, differently.`);
  }
  return present[0];
}

function pathAfterPrefix(url: string): string | undefined {
  const rest = url.slice(FORWARD_AUTH_PATH.length);
  return rest.startsWith('/') ? rest : undefined;
}

/** What a refused forward-authentication request tells the proxy, for the metrics. */
function decisionOf(error: unknown): ForwardAuthDecision {
  const { status } = toTesseraError(error);
  return status === 401 ? 'unauthenticated' : status === 403 ? 'forbidden' : 'error';
}
