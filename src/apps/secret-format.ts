import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * A ClientSecret that Tessera makes: `tessera_`, 43 random base62 characters (256 bits), then a
 * checksum of those 43, the CRC-32 in 6 base62 characters: 57 characters in all. The prefix lets
 * secret scanners (gitleaks, trufflehog, GitHub's secret scanning) find one in code or logs; the
 * checksum lets them tell a real one from a string that only looks like one without asking the
 * service, as GitHub's own tokens do. The checksum is no protection: anyone can compute it.
 * Secrets made before (64 hex characters) and imported ones keep working, since a ClientSecret is
 * checked by its HMAC whatever its form.
 */
export const CLIENT_SECRET_PREFIX = 'tessera_';
const RANDOM_CHARACTERS = 43;
const CHECKSUM_CHARACTERS = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Random bytes below this are used (62 × 4), so that every character is equally likely. */
const UNBIASED_BELOW = 248;

/** The form, checksum aside, without anchors: what a scanner's rule matches (docs/gitleaks.toml). */
export const CLIENT_SECRET_FORM = `${CLIENT_SECRET_PREFIX}[0-9A-Za-z]{${RANDOM_CHARACTERS + CHECKSUM_CHARACTERS}}`;
export const CLIENT_SECRET_PATTERN = new RegExp(`^${CLIENT_SECRET_FORM}$`);

export function generateClientSecret(): string {
  let random = '';
  while (random.length < RANDOM_CHARACTERS) {
    for (const byte of randomBytes(64)) {
      if (byte < UNBIASED_BELOW && random.length < RANDOM_CHARACTERS) random += BASE62[byte % 62];
    }
  }
  return `${CLIENT_SECRET_PREFIX}${random}${checksumOf(random)}`;
}

/** Whether `secret` has the form and a checksum that matches: a real Tessera secret, or one typed out with care. */
export function isTesseraClientSecret(secret: string): boolean {
  if (!CLIENT_SECRET_PATTERN.test(secret)) return false;
  const random = secret.slice(CLIENT_SECRET_PREFIX.length, CLIENT_SECRET_PREFIX.length + RANDOM_CHARACTERS);
  return secret.endsWith(checksumOf(random));
}

function checksumOf(random: string): string {
  let value = crc32(random);
  let digits = '';
  for (let i = 0; i < CHECKSUM_CHARACTERS; i++) {
    digits = BASE62[value % 62] + digits;
    value = Math.floor(value / 62);
  }
  return digits;
}
