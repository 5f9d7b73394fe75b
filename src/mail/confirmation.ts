import type { KeyEncryption } from '../jwt/key-encryption.js';

/** How long a confirmation link works: a week, as a new account's password link. */
export const CONFIRMATION_LIFETIME_MS = 7 * 24 * 3_600_000;

const PURPOSE = 'email confirmation';
/** Far longer than any token made here: what is longer is not read at all. */
const MAX_TOKEN_LENGTH = 1_000;

export interface ConfirmationClaim {
  developerId: string;
  email: string;
  /** UNIX ms. */
  expiresAt: number;
}

/**
 * The token of a link that confirms a developer's address: the developer, the address and the
 * expiry, sealed under the key-encryption key (AES-256-GCM, so a token can be neither read nor
 * made without it). Nothing is stored: confirming again is harmless, and a token for an address the
 * account no longer has confirms nothing.
 */
export class EmailConfirmations {
  constructor(private readonly encryption: KeyEncryption) {}

  token(claim: ConfirmationClaim): string {
    const payload = JSON.stringify([claim.developerId, claim.email, claim.expiresAt]);
    return this.encryption.encrypt(Buffer.from(payload), PURPOSE).toString('base64url');
  }

  /** What the token says, if it is one of these; undefined otherwise (whether or not it has expired: the caller checks). */
  read(token: string): ConfirmationClaim | undefined {
    if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]{40,}$/.test(token)) return undefined;
    try {
      const [developerId, email, expiresAt] = JSON.parse(this.encryption.decrypt(Buffer.from(token, 'base64url'), PURPOSE).toString()) as [
        string,
        string,
        number,
      ];
      return { developerId, email, expiresAt };
    } catch {
      return undefined;
    }
  }
}
