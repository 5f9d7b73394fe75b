import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyResult } from 'jose';
import { LRUCache } from 'lru-cache';
import { ownKey } from '../cache/own-key.js';
import { systemClock, type Clock } from '../clock.js';
import { CREDENTIAL_CLIENT_ID_PATTERN } from '../credentials/credential.js';
import { TesseraError } from '../errors.js';
import type { MaybePromise } from '../maybe-promise.js';
import { anonymousBearer, type Principal } from '../principal.js';
import {
  ACCESS_TOKEN_TYPE,
  accessTokenFacts,
  JWT_ALGORITHMS,
  looksLikeJwt,
  MAX_JWT_LENGTH,
  type JwtAccessToken,
  type JwtHeader,
} from './access-token.js';
import { StatusListCache, type StatusList } from './status-list-cache.js';

export interface TesseraJwtVerifierOptions {
  /** The app's issuer: `{Tessera's URL}/api/apps/{appId}`, its metadata's `issuer` and its tokens' `iss`. */
  issuer: string;
  /** Where the app's keys are published; by default what its metadata (RFC 8414) names as `jwks_uri`. */
  jwksUri?: string;
  /** What a token's `aud` must hold (one of them, for a list); by default `tessera:app:{appId}`. */
  audience?: string | readonly string[];
  /** How long the JWKS is used before it is read again (jose's `cacheMaxAge`); 300,000 (5 min, the JWKS's `max-age`) by default. */
  jwksCacheMaxAgeMs?: number;
  /** After a read of the JWKS, how long a token of an unknown `kid` is refused without reading it again (jose's `cooldownDuration`); 30,000 by default. */
  jwksCooldownMs?: number;
  /** The longest a status list is used before it is fetched again, whatever its `ttl` says; 300 by default. */
  statusListMaxTtlSeconds?: number;
  /** How long past its `ttl` a status list is still used while it cannot be fetched again; 10 by default. */
  statusListGraceSeconds?: number;
  /** How long a fetch (metadata, JWKS, status list) may take; 5,000 by default. */
  fetchTimeoutMs?: number;
  /** How many verified tokens are remembered (the least recently used go first); 10,000 by default. */
  maxCachedTokens?: number;
  /** The time tokens and status lists are checked against; the system's by default (the JWKS's cache keeps the system's own). */
  clock?: Clock;
}

/** A token whose signature and claims were verified: what it stands for, and where its status is. */
interface VerifiedToken {
  principal: Principal;
  list: StatusList;
  idx: number;
  /** UNIX ms: its `exp`, or sooner, when the JWKS it was verified with is due to be read again (its key may have been retired since). */
  until: number;
}

/** Errors of jose that say the keys could not be had, rather than that the token is wrong. */
const KEYS_UNAVAILABLE = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JWK_INVALID', 'ERR_JOSE_GENERIC']);
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * Checks an app's JWT access tokens (RFC 9068) in another service, with no access to Tessera's
 * store: the signature against the app's JWKS (jose's `createRemoteJWKSet`, which reads it again
 * for a `kid` it does not know, at most once per cooldown), the header and claims as Tessera makes
 * them (`jwtVerify` with the issuer, audience, `typ: at+jwt`, EdDSA or ES256), then the token's
 * status in its Token Status List (`StatusListCache`). A verified token is remembered by its text
 * until its `exp` (or until the JWKS is read again), so that checking it again is a lookup and its
 * status bit. A wrong token is `undefined`; keys or a status list that cannot be fetched throw
 * `503 SERVICE_UNAVAILABLE`.
 */
export class RemoteJwtVerifier {
  readonly appId: string;
  readonly #keys: JWTVerifyGetKey;
  readonly #statusLists: StatusListCache;
  readonly #verified: LRUCache<string, VerifiedToken>;
  readonly #clock: Clock;
  readonly #audience: string | string[];
  readonly #jwksCacheMaxAgeMs: number;
  /** UNIX ms: when the JWKS was last read. */
  #jwksReadAt = 0;

  private constructor(
    readonly issuer: string,
    readonly jwksUri: string,
    options: TesseraJwtVerifierOptions,
  ) {
    this.appId = appIdOf(issuer);
    this.#clock = options.clock ?? systemClock;
    this.#jwksCacheMaxAgeMs = options.jwksCacheMaxAgeMs ?? 300_000;
    const fetchTimeoutMs = options.fetchTimeoutMs ?? 5_000;
    this.#keys = createRemoteJWKSet(new URL(jwksUri), {
      cacheMaxAge: this.#jwksCacheMaxAgeMs,
      cooldownDuration: options.jwksCooldownMs ?? 30_000,
      timeoutDuration: fetchTimeoutMs,
      [customFetch]: async (url, init) => {
        const response = await fetch(url, init);
        if (response.status === 200) this.#jwksReadAt = this.#clock.now();
        return response;
      },
    });
    this.#statusLists = new StatusListCache({
      keys: this.#keys,
      origin: new URL(issuer).origin,
      clock: this.#clock,
      maxTtlSeconds: options.statusListMaxTtlSeconds ?? 300,
      graceMs: (options.statusListGraceSeconds ?? 10) * 1000,
      fetchTimeoutMs,
    });
    const audience = options.audience ?? `tessera:app:${this.appId}`;
    this.#audience = typeof audience === 'string' ? audience : [...audience];
    this.#verified = new LRUCache({ max: options.maxCachedTokens ?? 10_000 });
  }

  /** A verifier of the app's tokens; reads the app's metadata for its `jwks_uri` unless `jwksUri` is given. */
  static async create(options: TesseraJwtVerifierOptions): Promise<RemoteJwtVerifier> {
    const issuer = options.issuer.replace(/\/$/, '');
    appIdOf(issuer);
    const jwksUri = options.jwksUri ?? (await discoverJwksUri(issuer, options.fetchTimeoutMs ?? 5_000));
    return new RemoteJwtVerifier(issuer, jwksUri, options);
  }

  /**
   * The principal a JWT access token of this app stands for, or undefined (malformed, forged,
   * expired, revoked, of another app). A token verified before is answered from memory, with its
   * status looked up in its list; a promise otherwise.
   */
  principal(token: string): MaybePromise<Principal | undefined> {
    if (token.length > MAX_JWT_LENGTH) return undefined;
    const verified = this.#verified.get(token);
    if (verified !== undefined) {
      if (this.#clock.now() < verified.until) return this.#unlessRevoked(verified);
      this.#verified.delete(token);
    }
    if (!looksLikeJwt(token)) return undefined;
    return this.#verify(token);
  }

  #unlessRevoked(verified: VerifiedToken): MaybePromise<Principal | undefined> {
    const valid = this.#statusLists.isValid(verified.list, verified.idx);
    if (!(valid instanceof Promise)) return valid ? { ...verified.principal } : undefined;
    return valid.then((isValid) => (isValid ? { ...verified.principal } : undefined));
  }

  async #verify(token: string): Promise<Principal | undefined> {
    let result: JWTVerifyResult;
    try {
      result = await jwtVerify(token, this.#keys, {
        issuer: this.issuer,
        audience: this.#audience,
        typ: ACCESS_TOKEN_TYPE,
        algorithms: [...JWT_ALGORITHMS],
        requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id'],
        currentDate: new Date(this.#clock.now()),
      });
    } catch (error) {
      if (error instanceof errors.JOSEError && !KEYS_UNAVAILABLE.has(error.code)) return undefined;
      throw keysUnavailable(this.jwksUri, error);
    }
    const { protectedHeader: header, payload } = result;
    // Tessera's header is exactly {alg, kid, typ}: anything else is not its making.
    if (Object.keys(header).length !== 3 || typeof header.kid !== 'string') return undefined;
    const facts = accessTokenFacts({ header: header as JwtHeader, claims: payload });
    if (facts === undefined || facts.appId !== this.appId) return undefined;
    const principal = principalOf(facts, payload);
    const list = this.#statusLists.list(facts.status.uri);
    if (principal === undefined || list === undefined) return undefined;
    const verified: VerifiedToken = {
      principal,
      list,
      idx: facts.status.idx,
      until: Math.min(facts.expiresAt, this.#jwksReadAt + this.#jwksCacheMaxAgeMs),
    };
    this.#verified.set(ownKey(token), verified);
    return this.#unlessRevoked(verified);
  }
}

/** What a verified token stands for, as the store-based checks say it; undefined if its claims are not Tessera's. */
function principalOf(facts: JwtAccessToken, claims: JWTPayload): Principal | undefined {
  const { sub, client_id: clientId, scope } = claims;
  if (typeof clientId !== 'string' || typeof sub !== 'string' || (scope !== undefined && typeof scope !== 'string')) return undefined;
  if (facts.kind === 'anonymous') return anonymousBearer(facts.appId, facts.expiresAt, facts.attestation);
  return {
    appId: facts.appId,
    kind: 'admin',
    id: sub,
    auth: 'bearer',
    expiresAt: facts.expiresAt,
    scopes: scope === undefined ? null : Object.freeze(scope === '' ? [] : scope.split(' ')),
    // The app's own ClientID is `client_id` too; a principal names only a credential's.
    clientId: CREDENTIAL_CLIENT_ID_PATTERN.test(clientId) ? clientId : null,
  };
}

/** The AppID of an issuer `{base}/api/apps/{appId}`; throws for any other URL. */
function appIdOf(issuer: string): string {
  const url = URL.parse(issuer);
  const appId = url === null ? undefined : /\/api\/apps\/([^/]+)$/.exec(url.pathname)?.[1];
  if (url === null || appId === undefined || url.search !== '' || url.hash !== '')
    throw new TypeError(`The issuer must be an app's: {Tessera's URL}/api/apps/{appId}, not ${issuer}.`);
  try {
    return decodeURIComponent(appId);
  } catch {
    throw new TypeError(`The issuer's AppID is not percent-encoded as a URL's: ${issuer}.`);
  }
}

/** The app's `jwks_uri`, from its metadata (RFC 8414 §3: the well-known path goes before the issuer's path). */
async function discoverJwksUri(issuer: string, timeoutMs: number): Promise<string> {
  const { origin, pathname } = new URL(issuer);
  const metadataUrl = `${origin}/.well-known/oauth-authorization-server${pathname}`;
  const response = await fetch(metadataUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
  if (response.status !== 200) throw new Error(`${metadataUrl} answered ${response.status}: is ${issuer} the issuer of a Tessera app?`);
  const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
  if (metadata.issuer !== issuer) throw new Error(`${metadataUrl} names the issuer ${String(metadata.issuer)}, not ${issuer}.`);
  if (typeof metadata.jwks_uri !== 'string' || URL.parse(metadata.jwks_uri) === null)
    throw new Error(`${metadataUrl} names no jwks_uri: is this a Tessera of 0.4.0 or later?`);
  return metadata.jwks_uri;
}

function keysUnavailable(jwksUri: string, cause: unknown): TesseraError {
  const error = new TesseraError(
    'SERVICE_UNAVAILABLE',
    "Tessera's keys cannot be fetched right now, so the token cannot be checked; try again shortly.",
    {
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
      internalDetail: `JWKS ${jwksUri}`,
    },
  );
  error.cause = cause;
  return error;
}
