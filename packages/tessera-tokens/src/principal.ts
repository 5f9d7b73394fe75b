/**
 * How an anonymous token's request proved that it came from the genuine app (`X-Tessera-Attestation`):
 * a proof of work, Apple App Attest, Play Integrity, or a developer's debug token.
 */
export const ATTESTATION_PROVIDERS = ['pow', 'apple', 'android', 'debug'] as const;
export type AttestationProvider = (typeof ATTESTATION_PROVIDERS)[number];

/** Who a request is made by, once authenticated. */
export type PrincipalKind = 'anonymous' | 'admin';

/**
 * Where a bearer principal keeps the selector of the token it was authenticated with (latin1; the
 * token's public half, never its secret), for revocation to tell a caller's own token. A symbol, so
 * that it stays out of JSON and out of the fields other services read.
 */
export const TOKEN_SELECTOR = Symbol('tessera.tokenSelector');

export interface Principal {
  appId: string;
  kind: PrincipalKind;
  /** The admin id of the app for an admin token; `ANONYMOUS` otherwise. */
  id: string;
  /** `basic`: no token, `Authorization: Basic base64(AppID:anything)`; `bearer`: a token. */
  auth: 'basic' | 'bearer';
  /** When the bearer token stops working (UNIX ms), or null if it never does / there is none. */
  expiresAt: number | null;
  /**
   * What an admin token issued from a credential (or a credential's client authentication) may
   * do: Tessera's built-in scopes for its own admin features, and the app's own for the rest of the
   * backend. Null for every other principal: an admin of the app's own ClientID may do everything,
   * and an anonymous one has no scopes.
   */
  scopes: readonly string[] | null;
  /** The ClientID of the credential an admin token (or client authentication) came from; null for the app's own ClientID, and anonymous. */
  clientId: string | null;
  /** For an anonymous token issued with an attestation: its provider. Absent otherwise. */
  attestation?: AttestationProvider;
  /** With `auth: 'bearer'`: the selector of the token. */
  readonly [TOKEN_SELECTOR]?: string;
}

export const ANONYMOUS_ID = 'ANONYMOUS';

/**
 * The principal of an anonymous bearer token of an app (self-verifying, or a JWT): expiring at
 * `expiresAt`, with the provider of the attestation it was issued with, and the token's key for
 * revocation to tell a caller's own token (`TOKEN_SELECTOR`) where the check knows it.
 */
export function anonymousBearer(
  appId: string,
  expiresAt: number | null,
  attestation: AttestationProvider | null,
  selector?: string,
): Principal {
  const principal: Principal =
    selector === undefined
      ? { appId, kind: 'anonymous', id: ANONYMOUS_ID, auth: 'bearer', expiresAt, scopes: null, clientId: null }
      : { appId, kind: 'anonymous', id: ANONYMOUS_ID, auth: 'bearer', expiresAt, scopes: null, clientId: null, [TOKEN_SELECTOR]: selector };
  if (attestation !== null) principal.attestation = attestation;
  return principal;
}
