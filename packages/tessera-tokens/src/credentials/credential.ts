import type { AccessTokenFormat } from '../token-format.js';
import { randomHex } from '../crypto.js';

/** Who made a credential: the operator (the CLI), a developer (the portal), or an admin token with `credentials:manage` (the API). */
export type CredentialCreator = { kind: 'operator' } | { kind: 'developer'; developerId: string } | { kind: 'admin'; clientId: string };

/**
 * A credential of an app besides its own ClientID (docs/security.md, "Least privilege"): a ClientID
 * and ClientSecret whose admin tokens may do only what its scopes say, until its expiry, from its
 * addresses. Stored with the ClientSecret only as its digest, as the app's own.
 */
export interface CredentialRecord {
  clientId: string;
  appId: string;
  name: string;
  /** Checked, sorted, no repeats (`checkScopes`); at least one. */
  scopes: readonly string[];
  /** UNIX ms after which no token is issued from it (exclusive), or null for never. */
  expiresAt: number | null;
  /** CIDRs, canonical (`parseAddressList`), that may use it; empty: any address. */
  allowFrom: readonly string[];
  secretHash: Buffer;
  /** The secret the last rotation replaced, while its grace period lasts (UNIX ms, exclusive); at most one. */
  previousSecret: { hash: Buffer; validUntil: number } | null;
  /** UNIX ms. */
  createdAt: number;
  createdBy: CredentialCreator;
  /** When it was last used to authenticate (UNIX ms; written at most once a minute), or null. */
  lastUsedAt: number | null;
  /** The format of its tokens (`AppConfiguration.accessTokenFormat`); null: the app's. */
  accessTokenFormat: AccessTokenFormat | null;
}

/** What anyone allowed to manage an app's credentials may see of one: never its secret. */
export interface CredentialDescription {
  clientId: string;
  name: string;
  scopes: string[];
  /** ISO 8601, or null. */
  expiresAt: string | null;
  allowFrom: string[];
  createdAt: string;
  /** `operator`, `developer` or `admin`. */
  createdBy: CredentialCreator['kind'];
  /** The developer's id, when a developer made it. */
  createdByDeveloperId?: string;
  /** When an admin token made it: the ClientID it was issued to (the app's own, or a credential's). */
  createdByClientId?: string;
  lastUsedAt: string | null;
  /** Until when the secret the last rotation replaced works (or worked), or null. */
  previousSecretValidUntil: string | null;
  /** The format of its tokens; null: the app's (`accessTokenFormat` of its configuration). */
  accessTokenFormat: AccessTokenFormat | null;
}

export function describeCredential(credential: CredentialRecord): CredentialDescription {
  const { createdBy } = credential;
  return {
    clientId: credential.clientId,
    name: credential.name,
    scopes: [...credential.scopes],
    expiresAt: isoOrNull(credential.expiresAt),
    allowFrom: [...credential.allowFrom],
    createdAt: new Date(credential.createdAt).toISOString(),
    createdBy: createdBy.kind,
    ...(createdBy.kind === 'developer' ? { createdByDeveloperId: createdBy.developerId } : {}),
    ...(createdBy.kind === 'admin' ? { createdByClientId: createdBy.clientId } : {}),
    lastUsedAt: isoOrNull(credential.lastUsedAt),
    previousSecretValidUntil: isoOrNull(credential.previousSecret?.validUntil ?? null),
    accessTokenFormat: credential.accessTokenFormat,
  };
}

function isoOrNull(instant: number | null): string | null {
  return instant === null ? null : new Date(instant).toISOString();
}

/** Credentials an app may have: each is read with the app on every request that misses the cache. */
export const MAX_CREDENTIALS_PER_APP = 50;
export const MAX_CREDENTIAL_NAME_LENGTH = 100;

/**
 * A credential's ClientID: `tcl_` and 24 hex characters (96 random bits). Not a secret; its form
 * tells it from an app's own ClientID (32 hex characters) in logs and support requests.
 */
export const CREDENTIAL_CLIENT_ID_PATTERN = /^tcl_[0-9a-f]{24}$/;

export function generateCredentialClientId(): string {
  return `tcl_${randomHex(12)}`;
}

/** The credential of `clientId` among an app's, or undefined. */
export function findCredential(credentials: readonly CredentialRecord[], clientId: string): CredentialRecord | undefined {
  if (credentials.length === 0 || !CREDENTIAL_CLIENT_ID_PATTERN.test(clientId)) return undefined;
  return credentials.find((credential) => credential.clientId === clientId);
}
