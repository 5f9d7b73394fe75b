import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { fillRandom } from '../random-pool.js';
import { ATTESTATION_PROVIDERS, type AttestationProvider, type PrincipalKind } from '../principal.js';

/**
 * JWT access tokens (RFC 9068), for the apps whose `accessTokenFormat` is `jwt`: signed with one of
 * the service's JWT keys (`JWT_ALGORITHMS`), published in the JWKS. The header is exactly
 * `{alg, kid, typ: "at+jwt"}`; the algorithm is the key's, never the header's choice, so `none`, an
 * HMAC under a public key or another algorithm than the key's is refused before any crypto.
 *
 * Claims: `iss`, `sub` (the admin id, or `ANONYMOUS`), `aud`, `client_id`, `exp` (always), `iat`,
 * `jti`, `scope` (a credential's token with scopes), `app_id`, `status` (its place in a Token
 * Status List), and `attestation` for an anonymous token issued with one.
 *
 * `jti` is 16 bytes, base64url: the issue time in ms (6 bytes, big-endian) and 10 random bytes. For
 * an admin token it is the stored token's selector (the row the service checks and revokes); for an
 * anonymous one, its id (what a revocation of that one token keeps, as for a self-verifying token).
 */
export const JWT_ALGORITHMS = ['EdDSA', 'ES256'] as const;
/** The `typ` of an access token (RFC 9068), and of a Token Status List (draft-ietf-oauth-status-list). */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
export const STATUS_LIST_TYPE = 'statuslist+jwt';
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/**
 * The longest token considered: a header, the claims with a credential's 32 longest scopes and the
 * app's 5 longest audiences, and a signature fit (about 5,000 characters at most), and so does a
 * header line of nginx's default buffers (8 KiB).
 */
export const MAX_JWT_LENGTH = 6144;
/** The longest lifetime of a JWT access token: 24 h (what a key stays published after it stops signing). */
export const MAX_JWT_LIFETIME_MS = 24 * 3_600_000;
/** The claim saying which app a token belongs to. */
export const APP_ID_CLAIM = 'app_id';
const JTI_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export interface JwtHeader {
  alg: JwtAlgorithm;
  kid: string;
  typ: string;
}

export interface StatusReference {
  status_list: { idx: number; uri: string };
}

export interface AccessTokenClaims {
  iss: string;
  sub: string;
  aud: string | string[];
  client_id: string;
  exp: number;
  iat: number;
  jti: string;
  scope?: string;
  app_id: string;
  status: StatusReference;
  attestation?: AttestationProvider;
}

/** A presented JWT split and decoded, not yet verified. */
export interface ParsedJwt<Claims = unknown> {
  header: JwtHeader;
  claims: Claims;
  /** `header.payload`: what the signature is over. */
  signingInput: string;
  signature: Buffer;
}

/** What a JWT access token says, once its shape is checked: the facts a check needs. */
export interface JwtAccessToken {
  kid: string;
  kind: PrincipalKind;
  appId: string;
  /** The `jti`'s 16 bytes. */
  id: Buffer;
  /** UNIX ms: from the `jti`, exact (`iat` is in seconds). */
  issuedAt: number;
  /** UNIX ms: `exp`. */
  expiresAt: number;
  attestation: AttestationProvider | null;
  /** Its place in a status list (`status.status_list`). */
  status: { idx: number; uri: string };
}

/** A signing key: its id, algorithm and private key. */
export interface JwtSigningKey {
  kid: string;
  algorithm: JwtAlgorithm;
  privateKey: KeyObject;
}

/** A published key: its id, algorithm and public key. */
export interface JwtVerificationKey {
  kid: string;
  algorithm: JwtAlgorithm;
  publicKey: KeyObject;
}

/** A compact JWS of `claims` under `key`, with `typ`. */
export function signJwt(key: JwtSigningKey, typ: string, claims: object): string {
  const header = base64urlJson({ alg: key.algorithm, kid: key.kid, typ });
  const signingInput = `${header}.${base64urlJson(claims)}`;
  return `${signingInput}.${signBytes(key, signingInput).toString('base64url')}`;
}

function signBytes(key: JwtSigningKey, input: string): Buffer {
  return key.algorithm === 'EdDSA'
    ? sign(null, Buffer.from(input), key.privateKey)
    : sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
}

/** Whether `jwt`'s signature is `key`'s, with the key's own algorithm (the header must name it). */
export function signedBy(jwt: ParsedJwt, key: JwtVerificationKey): boolean {
  if (jwt.header.alg !== key.algorithm || jwt.header.kid !== key.kid) return false;
  const input = Buffer.from(jwt.signingInput);
  if (key.algorithm === 'EdDSA') return jwt.signature.length === 64 && verify(null, input, key.publicKey, jwt.signature);
  return jwt.signature.length === 64 && verify('sha256', input, { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, jwt.signature);
}

/** Whether a presented bearer token has a JWT's shape (three base64url parts, a JSON header): checked before any other parsing. */
export function looksLikeJwt(token: string): boolean {
  return token.length <= MAX_JWT_LENGTH && token.startsWith('eyJ') && token.indexOf('.') > 0;
}

/**
 * Splits and decodes a compact JWS whose header is exactly `{alg, kid, typ}` with `typ` as given
 * and a known algorithm; undefined for anything else (never throws for what a client sent).
 */
export function parseJwt(token: string, typ: string): ParsedJwt | undefined {
  if (token.length > MAX_JWT_LENGTH) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) return undefined;
  const header = decodeJson(parts[0]!);
  if (!isObject(header) || Object.keys(header).length !== 3) return undefined;
  const { alg, kid, typ: type } = header;
  if (typeof alg !== 'string' || !(JWT_ALGORITHMS as readonly string[]).includes(alg)) return undefined;
  if (typeof kid !== 'string' || kid.length === 0 || kid.length > 64 || type !== typ) return undefined;
  const claims = decodeJson(parts[1]!);
  if (!isObject(claims)) return undefined;
  return {
    header: { alg: alg as JwtAlgorithm, kid, typ },
    claims,
    signingInput: `${parts[0]}.${parts[1]}`,
    signature: Buffer.from(parts[2]!, 'base64url'),
  };
}

/**
 * The facts of a JWT access token of this service's making (shape only: the signature, issuer,
 * audience and status are the caller's to check), or undefined; one that would live longer than
 * `MAX_JWT_LIFETIME_MS` from its issue time is not of this service's making.
 */
export function accessTokenFacts(jwt: Pick<ParsedJwt, 'header' | 'claims'>): JwtAccessToken | undefined {
  const claims = jwt.claims as Record<string, unknown>;
  const { sub, exp, jti, app_id: appId, attestation, status } = claims;
  const reference = isObject(status) && isObject(status.status_list) ? status.status_list : undefined;
  if (reference === undefined || typeof reference.uri !== 'string' || !Number.isSafeInteger(reference.idx) || (reference.idx as number) < 0)
    return undefined;
  if (typeof sub !== 'string' || typeof appId !== 'string' || typeof jti !== 'string') return undefined;
  if (typeof exp !== 'number' || !Number.isSafeInteger(exp)) return undefined;
  const id = BASE64URL.test(jti) ? Buffer.from(jti, 'base64url') : undefined;
  if (id === undefined || id.length !== JTI_BYTES || id.toString('base64url') !== jti) return undefined;
  if (attestation !== undefined && !(typeof attestation === 'string' && (ATTESTATION_PROVIDERS as readonly string[]).includes(attestation)))
    return undefined;
  // This service never signs one that lives longer: a token that does was not made here (a key leaked).
  if (exp * 1000 - id.readUIntBE(0, 6) > MAX_JWT_LIFETIME_MS + 1000) return undefined;
  return {
    kid: jwt.header.kid,
    kind: sub === 'ANONYMOUS' ? 'anonymous' : 'admin',
    appId,
    id,
    issuedAt: id.readUIntBE(0, 6),
    expiresAt: exp * 1000,
    attestation: (attestation as AttestationProvider | undefined) ?? null,
    status: { idx: reference.idx as number, uri: reference.uri },
  };
}

/** A new `jti`'s 16 bytes: the issue time in ms, then 10 random bytes (from the pool stored tokens' selectors come from). */
export function jtiBytes(issuedAt: number): Buffer {
  const bytes = Buffer.allocUnsafe(JTI_BYTES);
  bytes.writeUIntBE(issuedAt, 0, 6);
  fillRandom(bytes, 6, JTI_BYTES - 6);
  return bytes;
}

/**
 * A JWT admin token's stored verifier: 16 bytes of the SHA-256 of the whole token. The stored row
 * (with the hash of this) is matched by the token exactly as issued: a token altered anywhere, its
 * signature still valid or not, matches nothing.
 */
export function jwtVerifier(token: string): Buffer {
  return createHash('sha256').update(token).digest().subarray(0, 16);
}

/** A public key from its JWK (as the JWKS publishes it). */
export function publicKeyOf(jwk: object): KeyObject {
  return createPublicKey({ key: jwk as never, format: 'jwk' });
}

function base64urlJson(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
