import type { AppRecord } from '../apps/app.js';
import type { AppCache } from '../apps/cache.js';
import { adminRequired, invalidToken } from '../error-catalogue.js';
import { TesseraError } from '../errors.js';
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { ANONYMOUS_ID, type Principal } from '../principal.js';
import { parseAuthorization } from '../tokens/authorization-header.js';
import type { TokenChecker } from '../tokens/checker.js';
import { singleRawHeader } from './raw-headers.js';

export interface AuthenticationRequest {
  appId: string;
  /** The `Authorization` header, as sent. */
  authorization: string | undefined;
  /** The request path (a query string is ignored), for the `/me` rule. */
  path: string;
  /** Whether the resource is an admin feature. */
  adminRequired?: boolean;
  /** Recorded with a refused token. */
  clientAddress?: string;
  /**
   * Node's `rawHeaders` of the request, read only when it has no `Authorization` header: deployed
   * SDK clients' anonymous calls name the app in `X-Kii-AppID` and `X-Kii-AppKey` instead.
   */
  rawHeaders?: readonly string[];
}

/** What the Fastify and Express middleware need: the principal of a request, or the contract's error. */
export interface RequestAuthenticator {
  authenticate(request: AuthenticationRequest): MaybePromise<Principal>;
}

/**
 * Resolves the principal of a request under `/api/apps/{appId}/` in one of the seed's three modes,
 * or throws the contract's error. Shared by this service's routes, the Fastify and Express
 * middleware, and forward authentication.
 */
/**
 * Told of a request whose token was refused: the app it named, the client's address where known,
 * and for a JWT why (`JwtProblem`).
 */
export type RefusedTokens = (appId: string, clientAddress: string | null, problem?: string) => void;

export class Authenticator implements RequestAuthenticator {
  constructor(
    private readonly apps: AppCache,
    private readonly tokens: TokenChecker,
    /** Told of each refused token (the server records it); absent where tokens are only checked for another service. */
    private readonly onRefusedToken?: RefusedTokens,
  ) {}

  /**
   * The principal, from memory when the app and token were seen before (the common case), or a
   * promise of it; the contract's error is thrown or rejected. `await` handles both.
   */
  authenticate(request: AuthenticationRequest): MaybePromise<Principal> {
    return andThen(this.apps.require(request.appId), (app) => {
      const credentials = parseAuthorization(request.authorization);
      if (credentials.scheme === 'bearer') {
        const checked = this.tokens.principal(app, credentials.token);
        if (!(checked instanceof Promise)) return this.#bearer(checked, request, app, credentials.token);
        return checked.then((principal) => this.#bearer(principal, request, app, credentials.token));
      }
      if (credentials.scheme === 'basic' ? credentials.user === app.appId : namesAppInSdkHeaders(request, app.appId)) {
        if (!app.configuration.basicAnonymous) throw basicAnonymousOff();
        return applyRules(
          { appId: app.appId, kind: 'anonymous', id: ANONYMOUS_ID, auth: 'basic', expiresAt: null, scopes: null, clientId: null },
          request,
        );
      }
      throw new TesseraError('UNAUTHORIZED', 'Authentication is required: Authorization: Bearer <token>, or Basic base64(AppID:anything).');
    });
  }

  #bearer(principal: Principal | undefined, request: AuthenticationRequest, app: AppRecord, token: string): Principal {
    if (principal !== undefined) return applyRules(principal, request);
    const refused = this.onRefusedToken;
    if (refused !== undefined) {
      const address = request.clientAddress ?? null;
      // Worked out on the refusal path only; told without waiting for it (a key read, at worst).
      void Promise.resolve(this.tokens.refusal(app, token)).then(
        (problem) => refused(request.appId, address, problem),
        () => refused(request.appId, address),
      );
    }
    throw invalidToken();
  }
}

/**
 * Deployed SDK clients' anonymous calls: no `Authorization` at all, the app in `X-Kii-AppID` and its
 * AppKey in `X-Kii-AppKey`. That is Basic anonymous access to the app the header names, which must
 * be the app of the path; the AppKey must be there and is not checked (Basic anonymous access never
 * needs it).
 */
function namesAppInSdkHeaders(request: AuthenticationRequest, appId: string): boolean {
  if (request.authorization !== undefined || request.rawHeaders === undefined) return false;
  return singleRawHeader(request.rawHeaders, SDK_APP_ID) === appId && singleRawHeader(request.rawHeaders, SDK_APP_KEY) !== undefined;
}

/** The app's configuration turned Basic anonymous access off (`basicAnonymous: false`). */
function basicAnonymousOff(): TesseraError {
  return new TesseraError(
    'BASIC_ANONYMOUS_DISABLED',
    'This app does not accept Basic anonymous access: get an anonymous token (POST /api/apps/{appId}/oauth2/token) and send it as Authorization: Bearer <token>.',
  );
}

export const SDK_APP_ID = 'x-kii-appid';
export const SDK_APP_KEY = 'x-kii-appkey';

/** The `/me` rule, then admin-only resources. */
export function applyRules(principal: Principal, request: AuthenticationRequest): Principal {
  if (principal.kind === 'admin' && hasMeSegment(request.path)) {
    throw new TesseraError('ME_NOT_ALLOWED_FOR_ADMIN', 'An admin token cannot be used on a path with a "me" segment.');
  }
  if (request.adminRequired === true && principal.kind !== 'admin') {
    throw adminRequired();
  }
  return principal;
}

/**
 * Whether a path has a segment that is `me` once percent-decoded, in any case (`/users/me`,
 * `/users/%6De`, `/users/ME`): routers that match paths case-insensitively (Express, by default)
 * send `/users/ME` to the handler of `/users/me`.
 */
export function hasMeSegment(path: string): boolean {
  const query = path.indexOf('?');
  const pathname = query < 0 ? path : path.slice(0, query);
  if (!MAY_HAVE_ME.test(pathname)) return false;
  return pathname.split('/').some((segment) => (segment.includes('%') ? safeDecode(segment) : segment).toLowerCase() === 'me');
}

const MAY_HAVE_ME = /me|%/i;

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
