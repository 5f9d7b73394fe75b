import { TesseraError } from 'tessera-tokens/internal/errors.js';

/** RFC 5321's limit on a path (254) and on a local part (64). */
export const MAX_EMAIL_LENGTH = 254;
const MAX_LOCAL_PART_LENGTH = 64;

/**
 * The HTML standard's "valid email address", what a browser's `<input type="email">` accepts, so
 * that the portal's forms and the service agree on every address. ASCII only (an internationalised
 * domain is entered in its `xn--` form).
 */
const EMAIL_PATTERN =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/**
 * The email address as it is stored and looked up: without surrounding whitespace, lower-cased
 * (the local part too: two accounts that differ only in case would be two people's confusion, not
 * two people), at most `MAX_EMAIL_LENGTH` characters. Undefined if it is not an address.
 */
export function normaliseEmail(raw: string): string | undefined {
  // Checked before the pattern, so that a huge input costs nothing.
  if (raw.length > MAX_EMAIL_LENGTH + 64) return undefined;
  const trimmed = raw.trim();
  // The pattern is checked before lower-casing: toLowerCase turns some non-ASCII letters into ASCII
  // ones (the Kelvin sign into "k"), which must not slip an address past the check.
  if (trimmed.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(trimmed)) return undefined;
  if (trimmed.indexOf('@') > MAX_LOCAL_PART_LENGTH) return undefined;
  return trimmed.toLowerCase();
}

/** `normaliseEmail`, or `invalid_request` saying what an address must be. */
export function checkedEmail(raw: string): string {
  const email = normaliseEmail(raw);
  if (email === undefined) {
    throw new TesseraError(
      'invalid_request',
      `The email address is not valid: it must be name@domain, at most ${MAX_EMAIL_LENGTH} characters.`,
    );
  }
  return email;
}
