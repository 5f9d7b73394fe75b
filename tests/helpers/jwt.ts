import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { decodeJwt } from 'jose';

// JWT access tokens as tests take them apart, forge them and read their status lists.

/** A token's three parts, and its header and claims decoded. */
export interface JwtParts {
  headerPart: string;
  claimsPart: string;
  signaturePart: string;
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
}

export function partsOf(token: string): JwtParts {
  const [headerPart, claimsPart, signaturePart] = token.split('.') as [string, string, string];
  const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString()) as Record<string, unknown>;
  return { headerPart, claimsPart, signaturePart, header: decode(headerPart), claims: decode(claimsPart) };
}

/** A token of the caller's making: `claims` under `header`, signed as `signature` says. */
export function forged(header: object, claims: object, signature: (input: string) => string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part(header)}.${part(claims)}`;
  return `${input}.${signature(input)}`;
}

/** Signs as a key no JWKS publishes. */
export function strangerSigner(): (input: string) => string {
  const stranger = generateKeyPairSync('ed25519');
  return (input) => sign(null, Buffer.from(input), stranger.privateKey).toString('base64url');
}

/**
 * Tokens made from a `genuine` anonymous JWT that no verifier may take: `alg: none`, an HMAC under
 * the published key (`publicX`, its JWK's `x`), a `kid` never published, another key's signature,
 * claims altered under the genuine signature, and malformed ones; `foreign` is another app's.
 */
export function forgedTokens(genuine: string, publicX: string, foreign: string): Record<string, string> {
  const { header, claims, headerPart, claimsPart, signaturePart } = partsOf(genuine);
  const signedByStranger = strangerSigner();
  return {
    'alg none': forged({ ...header, alg: 'none' }, claims, () => ''),
    'HS256 with the public key': forged({ ...header, alg: 'HS256' }, claims, (input) =>
      createHmac('sha256', Buffer.from(publicX, 'base64url')).update(input).digest('base64url'),
    ),
    'a kid not published': forged({ ...header, kid: 'not-a-key' }, claims, signedByStranger),
    'signed by another key': forged(header, claims, signedByStranger),
    'claims altered': forged(header, { ...claims, exp: (claims.exp as number) + 3600 }, () => signaturePart),
    'another app': foreign,
    'a header over the limit': forged({ ...header, pad: 'x'.repeat(7000) }, claims, signedByStranger),
    'not base64url': `${headerPart}.${claimsPart}.***`,
    'two parts': `${headerPart}.${claimsPart}`,
  };
}

/** The `x` of the published key that signed `token`, from the JWKS at `jwksUri`. */
export async function publicXOf(token: string, jwksUri: string): Promise<string> {
  const { kid } = partsOf(token).header;
  const jwks = (await (await fetch(jwksUri)).json()) as { keys: { kid: string; x: string }[] };
  return jwks.keys.find((key) => key.kid === kid)!.x;
}

/** A status list, as a verifier reads it: its claims, and its bits inflated. */
export async function statusListAt(uri: string): Promise<{ claims: Record<string, unknown>; bits: Buffer }> {
  const response = await fetch(uri);
  assert.equal(response.status, 200, uri);
  assert.equal(response.headers.get('content-type'), 'application/statuslist+jwt');
  const claims = decodeJwt(await response.text()) as { status_list: { bits: number; lst: string }; sub: string };
  assert.equal(claims.sub, uri);
  return { claims, bits: inflateSync(Buffer.from(claims.status_list.lst, 'base64url')) };
}

/** A token's place in its status list (`status.status_list`). */
export function statusReferenceOf(token: string): { idx: number; uri: string } {
  return decodeJwt<{ status: { status_list: { idx: number; uri: string } } }>(token).status.status_list;
}

/** Whether bit `idx` of a status list is set: revoked. */
export function isSet(bits: Buffer, idx: number): boolean {
  return ((bits[idx >> 3]! >> (idx & 7)) & 1) === 1;
}
