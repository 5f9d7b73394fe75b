import { randomUUID } from 'tessera-tokens/internal/crypto.js';

/** A developer's account as stored: the password only as its Argon2id hash (`password-hash.ts`). */
export interface DeveloperRecord {
  /** A random UUID: stable, not secret, what memberships, sessions and events refer to. */
  id: string;
  /** Normalised (`email.ts`); unique. */
  email: string;
  /** The PHC string of the password's hash; null until the developer sets one through a one-time link. */
  passwordHash: string | null;
  /** UNIX ms. */
  createdAt: number;
  /** UNIX ms; a disabled developer cannot sign in and has no session. Null while enabled. */
  disabledAt: number | null;
  /**
   * UNIX ms: when the address was confirmed, by the link mailed at sign-up, or at creation for an
   * account the operator made (the operator vouches for it); null until then. Alerts are mailed to
   * confirmed addresses only (docs/portal.md, "Mail").
   */
  emailConfirmedAt: number | null;
}

/** What an operator may see of a developer: never the password's hash. */
export interface DeveloperDescription {
  id: string;
  email: string;
  createdAt: string;
  disabledAt: string | null;
  /** False until a password is set (the one-time link not used yet). */
  hasPassword: boolean;
}

export function describeDeveloper(developer: DeveloperRecord): DeveloperDescription {
  return {
    id: developer.id,
    email: developer.email,
    createdAt: new Date(developer.createdAt).toISOString(),
    disabledAt: developer.disabledAt === null ? null : new Date(developer.disabledAt).toISOString(),
    hasPassword: developer.passwordHash !== null,
  };
}

export function newDeveloperId(): string {
  return randomUUID();
}
