import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestAuthenticator } from '../../auth/authenticate.js';
import { checkedRequiredScope, scopeRefusal } from '../../auth/required-scope.js';
import { adminRequired } from '../../error-catalogue.js';
import type { TesseraError } from '../../errors.js';
import type { Principal } from '../../principal.js';
import { errorBody, errorHeaders } from '../errors.js';
import { singleHeader } from '../headers.js';
import { authenticationStep } from './step.js';

/** The parts of an Express request the middleware uses (no dependency on Express itself). */
export interface ExpressLikeRequest extends IncomingMessage {
  params?: Record<string, string | undefined>;
  originalUrl?: string;
  ip?: string;
  /** Set by `tesseraExpress` for every request it lets through. */
  principal?: Principal;
}

type Next = (error?: unknown) => void;

declare global {
  // Express's own request type gains `principal`, without this module depending on Express.
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's types merge requests' fields through this global namespace.
  namespace Express {
    interface Request {
      /** Set by `tesseraExpress` for every request it lets through. */
      principal?: Principal;
    }
  }
}

export interface TesseraExpressOptions {
  /** Where the AppID comes from; by default `req.params.appId`, else the URL's `/api/apps/{appId}/`. */
  appIdOf?: (request: ExpressLikeRequest) => string | undefined;
}

const APP_IN_URL = /^\/api\/apps\/([^/?#]+)/;

/**
 * Express middleware: authenticates the request in one of the three modes and sets `req.principal`,
 * or answers the contract's error (status, JSON body, `WWW-Authenticate`). Mount it where the app's
 * routes are, e.g. `app.use('/api/apps/:appId', tesseraExpress(verifier))`.
 */
export function tesseraExpress(
  authenticator: RequestAuthenticator,
  options: TesseraExpressOptions = {},
): (request: ExpressLikeRequest, response: ServerResponse, next: Next) => void {
  const appIdOf = options.appIdOf ?? defaultAppId;
  return authenticationStep<ExpressLikeRequest, ServerResponse, Next>(authenticator, {
    describe: (request) => ({
      appId: appIdOf(request) ?? '',
      authorization: singleHeader(request, 'authorization'),
      rawHeaders: request.rawHeaders,
      path: request.originalUrl ?? request.url ?? '/',
      clientAddress: request.ip ?? request.socket.remoteAddress,
    }),
    accept: (request, principal, next) => {
      request.principal = principal;
      next();
    },
    refuse: sendError,
    fail: (next, error) => next(error),
  });
}

/** For admin features: after `tesseraExpress`, anything but an admin token gets `403 ADMIN_REQUIRED`. */
export function tesseraRequireAdmin(request: IncomingMessage & { principal?: Principal }, response: ServerResponse, next: Next): void {
  if (request.principal?.kind === 'admin') next();
  else sendError(response, adminRequired());
}

/**
 * For a feature that needs `scope`, after `tesseraExpress`: an admin token of the app's own ClientID
 * passes, one issued from a credential only if its scopes include `scope` (`403 INSUFFICIENT_SCOPE`);
 * anything else gets `403 ADMIN_REQUIRED`.
 */
export function tesseraRequireScope(
  scope: string,
): (request: IncomingMessage & { principal?: Principal }, response: ServerResponse, next: Next) => void {
  const required = checkedRequiredScope(scope);
  return (request, response, next) => {
    const refusal = scopeRefusal(request.principal, required);
    if (refusal === undefined) next();
    else sendError(response, refusal);
  };
}

function defaultAppId(request: ExpressLikeRequest): string | undefined {
  const fromParams = request.params?.appId;
  if (fromParams !== undefined) return fromParams;
  return APP_IN_URL.exec(request.originalUrl ?? request.url ?? '')?.[1];
}

function sendError(response: ServerResponse, error: TesseraError): void {
  response.writeHead(error.status, errorHeaders(error)).end(errorBody(error));
}
