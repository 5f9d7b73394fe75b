import { Algorithm, hash, parseOptions, verify } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { normalisedPassword } from './password-rules.js';

/**
 * Argon2id at OWASP's first recommended setting (Password Storage Cheat Sheet): 19 MiB of memory,
 * 2 passes, 1 lane. Each hash or check takes one libuv thread for about 15–50 ms; sign-in limits
 * (`sign-in-limits.ts`) refuse an attempt before any hashing once a client is over its limit.
 */
export const PASSWORD_HASH_PARAMETERS = Object.freeze({
  algorithm: Algorithm.Argon2id,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
});

/** The PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) of a password already checked and normalised. */
export function hashPassword(normalised: string): Promise<string> {
  return hash(normalised, PASSWORD_HASH_PARAMETERS);
}

/**
 * Whether `presented` is the password of `passwordHash` (a PHC string). The presented password is
 * normalised as a new one is; one that cannot be a password is simply wrong. Argon2's own
 * comparison is constant-time.
 */
export async function verifyPassword(passwordHash: string, presented: string): Promise<boolean> {
  const normalised = normalisedPassword(presented);
  if (normalised === undefined) return false;
  try {
    return await verify(passwordHash, normalised);
  } catch {
    // A stored value that is not a PHC string matches nothing.
    return false;
  }
}

/** Whether a stored hash was made with other parameters than today's (then it is replaced at the next sign-in). */
export function needsRehash(passwordHash: string): boolean {
  try {
    const used = parseOptions(passwordHash);
    return (
      used.algorithm !== PASSWORD_HASH_PARAMETERS.algorithm ||
      used.memoryCost !== PASSWORD_HASH_PARAMETERS.memoryCost ||
      used.timeCost !== PASSWORD_HASH_PARAMETERS.timeCost ||
      used.parallelism !== PASSWORD_HASH_PARAMETERS.parallelism
    );
  } catch {
    return true;
  }
}

let dummy: Promise<string> | undefined;

/**
 * A hash of a random password no one knows, made with today's parameters: a sign-in for an unknown
 * email, or for an account without a password, is checked against it, so that it costs the same
 * work as a wrong password and gets the same answer at about the same time.
 */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(32).toString('base64url'));
  return dummy;
}
