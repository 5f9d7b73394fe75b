import { invalidCredentials } from 'tessera-tokens/internal/error-catalogue.js';
import type { DeveloperRecord } from './developer.js';
import { normaliseEmail } from './email.js';
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from './password-hash.js';
import { normalisedPassword } from './password-rules.js';
import type { SignInLimits } from './sign-in-limits.js';
import { trustedDeviceOf } from './trusted-device.js';
import type { DeveloperAccountStore } from './store.js';

export interface SignInCredentials {
  email: string;
  password: string;
  /** The client's address as the server saw it. */
  clientAddress: string | null;
  /** The browser's device token (`trusted-device.ts`), if it has one. */
  deviceToken?: string | undefined;
}

/**
 * The developer whose email and password these are, under the sign-in limits. Every refusal is the
 * same `INVALID_CREDENTIALS`, after the same work: an unknown email, an account without a password
 * yet, a disabled account and a wrong password are each checked against an Argon2id hash (a dummy
 * one when there is no real one to check), so neither the answer nor its time tells which it was.
 * Over a limit, `TOO_MANY_REQUESTS` comes before any hashing; the attempt is counted before its
 * hash too, so that a burst of attempts cannot all pass the limits before any of them is counted.
 */
export async function checkCredentials(
  accounts: DeveloperAccountStore,
  limits: SignInLimits,
  credentials: SignInCredentials,
): Promise<DeveloperRecord> {
  const email = normaliseEmail(credentials.email);
  const findDeveloper = () => (email === undefined ? undefined : accounts.findByEmail(email));
  // A device token is checked against its account before the limits, since it decides which apply.
  const presentsDevice = credentials.deviceToken !== undefined;
  const early = presentsDevice ? await findDeveloper() : undefined;
  const attempt = { email, clientAddress: credentials.clientAddress, trustedDevice: trustedDeviceOf(credentials.deviceToken, early) };
  const admitted = await limits.admit(attempt);
  const developer = presentsDevice ? early : await findDeveloper();
  const passwordHash = developer?.passwordHash ?? (await dummyPasswordHash());
  const matches = await verifyPassword(passwordHash, credentials.password);
  if (!matches || developer === undefined || developer.passwordHash === null || developer.disabledAt !== null) {
    throw invalidCredentials();
  }
  await admitted.succeeded();
  if (needsRehash(developer.passwordHash)) {
    // The parameters were raised since this hash was made: the password is at hand, so it is hashed
    // again now. If it changed meanwhile, the newer hash stays.
    const rehashed = await hashPassword(normalisedPassword(credentials.password)!);
    await accounts.rehashPassword(developer.id, developer.passwordHash, rehashed);
  }
  return developer;
}
