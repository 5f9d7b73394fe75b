import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { sha256 } from 'tessera-tokens/internal/crypto.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import {
  ACCESS_TOKEN_TYPE,
  jtiBytes,
  jwtVerifier,
  MAX_JWT_LENGTH,
  MAX_JWT_LIFETIME_MS,
  signJwt,
  type AccessTokenClaims,
} from 'tessera-tokens/internal/jwt/access-token.js';
import { ANONYMOUS_ID, type AttestationProvider } from 'tessera-tokens/internal/principal.js';
import { issuerOf } from 'tessera-tokens/internal/apps/issuer.js';
import type { JwtKeyService } from './keys.js';
import type { StatusLists } from './status-lists.js';

/** A JWT admin token, and what is stored of it: its `jti` as the selector, the hash of its verifier, its status index. */
export interface IssuedJwtAdminToken {
  token: string;
  selector: Buffer;
  verifierHash: Buffer;
  statusIndex: number;
  /** UNIX ms: `exp`. */
  expiresAt: number;
}

export interface JwtAdminTokenRequest {
  now: number;
  /** UNIX ms: already capped (`jwtExpiry`). */
  expiresAt: number;
  adminId: string;
  clientId: string;
  scopes: readonly string[] | null;
}

/**
 * The expiry of a JWT access token: always one, at most `MAX_JWT_LIFETIME_MS` from now (documented:
 * a JWT cannot be revoked everywhere at once), in whole seconds, as `exp` says it, so that what the
 * service says of the token (its stored expiry, `expires_in`, forward auth's header) is what `exp` says.
 */
export function jwtExpiry(now: number, resolved: number | null): number {
  const expiresAt = resolved === null ? now + MAX_JWT_LIFETIME_MS : Math.min(resolved, now + MAX_JWT_LIFETIME_MS);
  return Math.floor(expiresAt / 1000) * 1000;
}

/** A token no verifier would take (a PUBLIC_URL of thousands of characters) is refused rather than handed out. */
function withinLimit(token: string): string {
  if (token.length > MAX_JWT_LENGTH) {
    throw new TesseraError(
      'SERVICE_UNAVAILABLE',
      `This token would be longer than ${MAX_JWT_LENGTH} characters: the service's PUBLIC_URL is too long for JWTs.`,
    );
  }
  return token;
}

/** An app's audience: its own list if it set one, `tessera:app:{appId}` otherwise. */
export function audienceOf(app: AppRecord): string | string[] {
  const own = app.configuration.accessTokenAudience;
  if (own === null) return `tessera:app:${app.appId}`;
  return own.length === 1 ? own[0]! : [...own];
}

/**
 * Makes JWT access tokens (RFC 9068) for the apps whose `accessTokenFormat` is `jwt`: the claims, a
 * status list index, the signature. Its issuer is the app's (RFC 8414: `{base}/api/apps/{appId}`),
 * so it needs the service's URL (`PUBLIC_URL`, or the loopback address it listens on).
 */
export class JwtIssuer {
  #baseUrl: string | undefined;

  constructor(
    private readonly keys: JwtKeyService,
    readonly statusLists: StatusLists,
    publicUrl: string | undefined,
  ) {
    this.#baseUrl = publicUrl;
  }

  /** Where clients reach the service, once the server listens (when PUBLIC_URL is not set). */
  useBaseUrl(baseUrl: string | undefined): void {
    this.#baseUrl ??= baseUrl;
  }

  get baseUrl(): string | undefined {
    return this.#baseUrl;
  }

  async admin(app: AppRecord, request: JwtAdminTokenRequest): Promise<IssuedJwtAdminToken> {
    const selector = jtiBytes(request.now);
    const statusIndex = await this.statusLists.index(app, 'admin');
    const claims = this.#claims(app, request.now, request.expiresAt, selector, statusIndex, request.adminId, request.clientId);
    if (request.scopes !== null) claims.scope = request.scopes.join(' ');
    const token = withinLimit(signJwt(await this.keys.signingKey(), ACCESS_TOKEN_TYPE, claims));
    return { token, selector, verifierHash: sha256(jwtVerifier(token)), statusIndex, expiresAt: request.expiresAt };
  }

  async anonymous(app: AppRecord, issuedAt: number, expiresAt: number, attestation: AttestationProvider | null): Promise<string> {
    const statusIndex = await this.statusLists.index(app, 'anonymous');
    const claims = this.#claims(app, issuedAt, expiresAt, jtiBytes(issuedAt), statusIndex, ANONYMOUS_ID, app.appId);
    if (attestation !== null) claims.attestation = attestation;
    return withinLimit(signJwt(await this.keys.signingKey(), ACCESS_TOKEN_TYPE, claims));
  }

  #claims(app: AppRecord, issuedAt: number, expiresAt: number, jti: Buffer, statusIndex: number, sub: string, clientId: string) {
    const base = this.#baseUrl;
    if (base === undefined) {
      throw new TesseraError(
        'SERVICE_UNAVAILABLE',
        'JWT access tokens name their issuer by the URL clients reach the service at: its operator sets PUBLIC_URL.',
      );
    }
    const claims: AccessTokenClaims = {
      iss: issuerOf(base, app.appId),
      sub,
      aud: audienceOf(app),
      client_id: clientId,
      exp: Math.floor(expiresAt / 1000),
      iat: Math.floor(issuedAt / 1000),
      jti: jti.toString('base64url'),
      app_id: app.appId,
      status: { status_list: this.statusLists.reference(base, statusIndex) },
    };
    return claims;
  }
}
