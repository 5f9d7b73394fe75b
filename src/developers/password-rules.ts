import { TesseraError } from 'tessera-tokens/internal/errors.js';

/**
 * Password rules (docs/portal.md, "Accounts and sessions"), after OWASP ASVS 4.0.3 V2.1 and NIST
 * SP 800-63B: at least 12 characters, at most 128, counted in Unicode code points after NFKC
 * normalisation; any character, spaces included; no composition rules and no expiry.
 */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 128;

/** Beyond this many UTF-16 units a value cannot be a password: refused before it is normalised. */
const MAX_RAW_LENGTH = MAX_PASSWORD_LENGTH * 4;

/**
 * The form a password is hashed in: NFKC, so that the same password typed on two keyboards (a
 * precomposed "é" or "e" and a combining accent, a full-width digit) is the same password. Undefined
 * if it is too long to be one.
 */
export function normalisedPassword(password: string): string | undefined {
  if (password.length > MAX_RAW_LENGTH) return undefined;
  const normalised = password.normalize('NFKC');
  return codePoints(normalised) > MAX_PASSWORD_LENGTH ? undefined : normalised;
}

/** A new password, normalised, or `invalid_request` saying which rule it breaks. */
export function checkedNewPassword(password: string): string {
  const normalised = normalisedPassword(password);
  if (normalised === undefined || codePoints(normalised) < MIN_PASSWORD_LENGTH) {
    throw new TesseraError('invalid_request', `A password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters long.`);
  }
  if (normalised.trim().length === 0) throw new TesseraError('invalid_request', 'A password must not be only spaces.');
  return normalised;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
