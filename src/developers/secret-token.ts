import { randomBytes } from 'node:crypto';
import { digestsEqual, sha256 } from 'tessera-tokens/internal/crypto.js';

/**
 * A credential handed to a person (a session cookie, a one-time link's token), as Lucia's guide
 * builds them: `ID.SECRET`, both base64url. The id (128 random bits) is the record's key and is not
 * secret; the secret (256 random bits) is stored only as its SHA-256 and compared in constant time,
 * so a leaked store holds no usable credential and a lookup by id tells nothing about the secret.
 */
const ID_BYTES = 16;
const SECRET_BYTES = 32;
const ID_LENGTH = 22;
const SECRET_LENGTH = 43;
// 22 characters carry 132 bits for 128 and 43 carry 258 for 256: the padding bits must be zero,
// so that each token has exactly one spelling.
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{21}[AQgw]\.[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;
export const SECRET_TOKEN_LENGTH = ID_LENGTH + 1 + SECRET_LENGTH;

export interface NewSecretToken {
  /** What the person gets. */
  token: string;
  id: string;
  secretHash: Buffer;
}

export interface PresentedSecretToken {
  id: string;
  secret: Buffer;
}

export function generateSecretToken(): NewSecretToken {
  const id = randomBytes(ID_BYTES).toString('base64url');
  const secret = randomBytes(SECRET_BYTES);
  return { token: `${id}.${secret.toString('base64url')}`, id, secretHash: sha256(secret) };
}

/** Splits a presented token; undefined when it cannot be one (checked before any lookup). */
export function parseSecretToken(token: string): PresentedSecretToken | undefined {
  if (token.length !== SECRET_TOKEN_LENGTH || !TOKEN_PATTERN.test(token)) return undefined;
  return { id: token.slice(0, ID_LENGTH), secret: Buffer.from(token.slice(ID_LENGTH + 1), 'base64url') };
}

/** Whether the presented secret is the one whose hash is stored; constant-time. */
export function secretMatches(presented: PresentedSecretToken, secretHash: Buffer): boolean {
  return digestsEqual(sha256(presented.secret), secretHash);
}
