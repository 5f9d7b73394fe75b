import type { CredentialRecord } from '../credentials/credential.js';
import type { AccessTokenFormat } from '../token-format.js';

export { ACCESS_TOKEN_FORMATS, type AccessTokenFormat } from '../token-format.js';

/** Per-app settings. `null` everywhere means the seed's behaviour. */
export interface AppConfiguration {
  /** Longest lifetime an admin token may be given, in seconds; null: no maximum. */
  adminTokenMaxLifetimeSeconds: number | null;
  /** Longest lifetime an anonymous token may be given, in seconds; null: no maximum. */
  anonymousTokenMaxLifetimeSeconds: number | null;
  /** Whether an anonymous token request must carry the app's exact AppKey. */
  requireAppKey: boolean;
  /** The web origins whose pages may call the service (CORS), canonical (`src/apps/origins.ts`); none by default. */
  allowedOrigins: readonly string[];
  /**
   * Whether anonymous token requests must prove they come from the genuine app
   * (`X-Tessera-Attestation`, `src/attestation/` of the server): `off`, the seed's behaviour;
   * `monitor`, served as without and counted by outcome; `enforce`, refused without a valid one.
   */
  anonymousAttestation: AttestationMode;
  /** Whether Basic anonymous access (no token) is accepted; false refuses it with `401`. */
  basicAnonymous: boolean;
  /** The proof of work's key derivation (ALTCHA's `algorithm`). */
  powAlgorithm: PowAlgorithm;
  /** ALTCHA's `cost` of one attempt: iterations of the hash or of PBKDF2. */
  powCost: number;
  /** The most attempts a challenge needs, at the base rate: a solver makes half as many on average. */
  powMaxAttempts: number;
  /**
   * Anonymous token requests per minute (on one instance) above which the attempts a challenge
   * needs double, and double again at each doubling of the rate (up to 64 times); null: never.
   */
  powRisesAbovePerMinute: number | null;
  /** What its tokens are: `opaque` (the seed's) or `jwt` (RFC 9068 access tokens that other services check offline). */
  accessTokenFormat: AccessTokenFormat;
  /** A JWT access token's `aud`: these, or null for `tessera:app:{appId}`. */
  accessTokenAudience: readonly string[] | null;
}

export const ATTESTATION_MODES = ['off', 'monitor', 'enforce'] as const;
export type AttestationMode = (typeof ATTESTATION_MODES)[number];

/** The key derivations of ALTCHA v2 that a browser's Web Crypto and Node both have. */
export const POW_ALGORITHMS = ['SHA-256', 'SHA-384', 'SHA-512', 'PBKDF2/SHA-256', 'PBKDF2/SHA-384', 'PBKDF2/SHA-512'] as const;
export type PowAlgorithm = (typeof POW_ALGORITHMS)[number];

export const DEFAULT_APP_CONFIGURATION: Readonly<AppConfiguration> = Object.freeze({
  adminTokenMaxLifetimeSeconds: null,
  anonymousTokenMaxLifetimeSeconds: null,
  requireAppKey: false,
  allowedOrigins: Object.freeze([]),
  anonymousAttestation: 'off',
  basicAnonymous: true,
  powAlgorithm: 'SHA-256',
  powCost: 1,
  powMaxAttempts: 50_000,
  powRisesAbovePerMinute: null,
  accessTokenFormat: 'opaque',
  accessTokenAudience: null,
});

/**
 * The ClientSecret a rotation with a grace period replaced: it keeps working until `validUntil`
 * (UNIX ms, exclusive), so that server code can be redeployed with the new one in between.
 */
export interface PreviousClientSecret {
  hash: Buffer;
  validUntil: number;
}

/** An app as stored: the ClientSecret only as its digest. */
export interface AppRecord {
  appId: string;
  name: string;
  appKey: string;
  clientId: string;
  clientSecretHash: Buffer;
  /** The secret the last rotation replaced, if that rotation gave it a grace period; at most one. */
  previousSecret: PreviousClientSecret | null;
  /** The admin token's `id`: stable per app, not a secret. */
  adminId: string;
  /** UNIX ms. */
  createdAt: number;
  configuration: AppConfiguration;
  /**
   * Anonymous tokens issued at or before this instant (UNIX ms) are refused: the time of the last
   * revocation of all of the app's anonymous tokens, or null if there was none.
   */
  anonymousCutoff: number | null;
  /**
   * Counts the changes that took admin authority away (rotations, revocations). A token is stored
   * only if the app's count is still the one of the record its request was authenticated against:
   * a request that raced a revocation is authenticated again (`TokenIssuer`).
   */
  adminGeneration: number;
  /** Its further credentials (`src/credentials/`), oldest first: read with the app, so that a cached app has them. */
  credentials: readonly CredentialRecord[];
}

/** What an operator may see of an app, and what `GET /api/apps/{appId}` returns: never a secret. */
export interface AppDescription {
  appId: string;
  name: string;
  appKey: string;
  clientId: string;
  adminId: string;
  createdAt: string;
  configuration: AppConfiguration;
  /**
   * Until when the ClientSecret that the last rotation replaced works (or worked): ISO 8601, or null
   * when that rotation ended it at once (or there was none).
   */
  previousSecretValidUntil: string | null;
}

export function describeApp(app: AppRecord): AppDescription {
  return {
    appId: app.appId,
    name: app.name,
    appKey: app.appKey,
    clientId: app.clientId,
    adminId: app.adminId,
    createdAt: new Date(app.createdAt).toISOString(),
    configuration: { ...app.configuration },
    previousSecretValidUntil: app.previousSecret === null ? null : new Date(app.previousSecret.validUntil).toISOString(),
  };
}

export const MAX_APP_NAME_LENGTH = 200;
/** AppIDs in URLs are checked against this before any lookup. */
export const APP_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
