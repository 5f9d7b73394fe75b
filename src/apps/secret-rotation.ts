import { TesseraError } from 'tessera-tokens/internal/errors.js';

/**
 * The longest a rotation may keep the previous ClientSecret working: 30 days, ample for a redeploy,
 * short enough that a forgotten old secret does not linger.
 */
export const MAX_SECRET_GRACE_SECONDS = 30 * 24 * 60 * 60;

const GRACE_RULE = `The grace period must be a whole number of seconds from 1 to ${MAX_SECRET_GRACE_SECONDS} (30 days).`;

/** `--grace SECONDS` as given: digits only, 1 to `MAX_SECRET_GRACE_SECONDS`; `invalid_request` otherwise. */
export function parseGraceSeconds(text: string): number {
  if (!/^[0-9]{1,8}$/.test(text)) throw new TesseraError('invalid_request', GRACE_RULE);
  return checkedGraceSeconds(Number(text));
}

/** The grace period, if it is within the bounds; `invalid_request` otherwise. */
export function checkedGraceSeconds(seconds: number): number {
  if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > MAX_SECRET_GRACE_SECONDS) {
    throw new TesseraError('invalid_request', GRACE_RULE);
  }
  return seconds;
}
