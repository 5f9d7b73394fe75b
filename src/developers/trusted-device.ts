import { createHmac, randomBytes } from 'node:crypto';
import { digestsEqual } from 'tessera-tokens/internal/crypto.js';
import type { DeveloperRecord } from './developer.js';

/**
 * A device token (OWASP's "device cookie"): given to a browser that signed in, it makes that
 * browser a trusted device of the account, which the account-wide sign-in limit does not hold back
 * (`SignInAttempt.trustedDevice`), so that guessing from many addresses cannot keep the developer out.
 *
 * `DEVELOPER_ID.NONCE.MAC`, the MAC an HMAC-SHA256 keyed by the account's password hash: it needs no
 * key of its own, holds on every instance, and every token stops counting once the password changes.
 * It is no credential: it only changes which limits an attempt counts against.
 */
export function deviceTokenFor(developer: DeveloperRecord): string | null {
  if (developer.passwordHash === null) return null;
  const signed = `${developer.id}.${randomBytes(16).toString('base64url')}`;
  return `${signed}.${macOf(developer.passwordHash, signed).toString('base64url')}`;
}

/** The developer a token names, if it has the shape of one (the account to look up before checking it). */
export function deviceTokenDeveloperId(token: string): string | undefined {
  const parts = token.split('.');
  return parts.length === 3 && token.length <= MAX_DEVICE_TOKEN_LENGTH ? parts[0] : undefined;
}

/** The device's nonce if `token` is one this account gave and its password still is the same; null otherwise. */
export function trustedDeviceOf(token: string | undefined, developer: DeveloperRecord | undefined): string | null {
  if (token === undefined || developer === undefined || developer.passwordHash === null) return null;
  if (deviceTokenDeveloperId(token) !== developer.id) return null;
  const [id, nonce, mac] = token.split('.') as [string, string, string];
  const expected = macOf(developer.passwordHash, `${id}.${nonce}`);
  return digestsEqual(Buffer.from(mac, 'base64url'), expected) ? nonce : null;
}

/** A UUID, 22 and 43 characters, two dots: anything longer is no token of ours. */
const MAX_DEVICE_TOKEN_LENGTH = 120;

function macOf(passwordHash: string, signed: string): Buffer {
  return createHmac('sha256', passwordHash).update(signed).digest();
}
