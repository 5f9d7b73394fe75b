import { createHash } from 'node:crypto';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { addressKey } from '../limits/address-key.js';
import { tooManyRequests, type CounterOptions, type RateLimits } from '../limits/rate-limits.js';
import { NO_METRICS, type Metrics } from '../metrics/port.js';

/**
 * How many failed sign-ins are allowed before more are refused (`429`, before any password is
 * checked). docs/portal.md, "Throttling", says why these three and these numbers:
 * - one client on one account: 10 per 15 minutes (one person mistyping, or one guesser);
 * - one client address on every account: 100 per hour (credential stuffing from one place);
 * - one account from every client together: 50 per hour (a guesser with many addresses). Failures
 *   past a client's own limit are given back, so one client cannot use this up; and a browser that
 *   signed in to the account before (`trustedDevice`) is not held by it, so that no one can keep a
 *   developer out for good by failing on purpose.
 */
export interface SignInLimitSettings {
  failuresPerAccountAndClient: CounterOptions;
  failuresPerAddress: CounterOptions;
  failuresPerAccount: CounterOptions;
}

export const DEFAULT_SIGN_IN_LIMITS: Readonly<SignInLimitSettings> = Object.freeze({
  failuresPerAccountAndClient: { points: 10, duration: 15 * 60 },
  failuresPerAddress: { points: 100, duration: 3600 },
  failuresPerAccount: { points: 50, duration: 3600 },
});

export interface SignInAttempt {
  /** The normalised email; undefined if what was entered is not an address (only the address is counted then). */
  email: string | undefined;
  /** The client's address as the server saw it. */
  clientAddress: string | null;
  /**
   * A browser the caller has verified signed in to this very account before (OWASP's "device
   * cookie": a value the portal signed and bound to the account), or null. Its failures are counted
   * on their own, and the account-wide limit does not hold it.
   */
  trustedDevice: string | null;
}

export interface SignInLimits {
  /** Throws `TOO_MANY_REQUESTS` if this attempt may not be made now. */
  check(attempt: SignInAttempt): Promise<void>;
  /** Counts a failed attempt. */
  recordFailure(attempt: SignInAttempt): Promise<void>;
  /** Forgets this client's failures on this account (not the account's or the address's). */
  recordSuccess(attempt: SignInAttempt): Promise<void>;
}

export const NO_SIGN_IN_LIMITS: SignInLimits = {
  check: async () => {},
  recordFailure: async () => {},
  recordSuccess: async () => {},
};

/** Sign-in limits counted where the token endpoint's are (in memory, or shared in Redis); none when limits are off. */
export function createSignInLimits(
  limits: RateLimits,
  settings: SignInLimitSettings = DEFAULT_SIGN_IN_LIMITS,
  metrics: Metrics = NO_METRICS,
): SignInLimits {
  const perClient = limits.counter('sign-in-failures-by-client', settings.failuresPerAccountAndClient);
  const perAddress = limits.counter('sign-in-failures-by-address', settings.failuresPerAddress);
  const perAccount = limits.counter('sign-in-failures-by-account', settings.failuresPerAccount);
  if (perClient === undefined || perAddress === undefined || perAccount === undefined) return NO_SIGN_IN_LIMITS;

  const counted = (attempt: SignInAttempt): { limiter: RateLimiterAbstract; key: string; points: number }[] => {
    const address = attempt.clientAddress === null ? '-' : addressKey(attempt.clientAddress);
    const all = [{ limiter: perAddress, key: address, points: settings.failuresPerAddress.points }];
    if (attempt.email === undefined) return all;
    all.push({ limiter: perClient, key: clientKey(attempt.email, address, attempt.trustedDevice), points: settings.failuresPerAccountAndClient.points });
    if (attempt.trustedDevice === null) all.push({ limiter: perAccount, key: attempt.email, points: settings.failuresPerAccount.points });
    return all;
  };

  return {
    async check(attempt) {
      const counts = counted(attempt);
      const states = await Promise.all(counts.map(({ limiter, key }) => limiter.get(key)));
      for (const [index, state] of states.entries()) {
        if (state !== null && state.consumedPoints >= counts[index]!.points) {
          metrics.rateLimited('sign_in');
          throw tooManyRequests(state);
        }
      }
    },
    async recordFailure(attempt) {
      const [address, client, account] = counted(attempt);
      const [addressState, clientState] = await Promise.all([
        address!.limiter.penalty(address!.key, 1),
        client === undefined ? undefined : client.limiter.penalty(client.key, 1),
      ]);
      // A client past its own limit does not use up the account's: one client alone cannot lock the
      // account's other clients out.
      const clientOver = addressState.consumedPoints > address!.points || (clientState !== undefined && clientState.consumedPoints > client!.points);
      if (account !== undefined && !clientOver) await account.limiter.penalty(account.key, 1);
    },
    async recordSuccess(attempt) {
      const [, client] = counted(attempt);
      if (client !== undefined) await client.limiter.delete(client.key);
    },
  };
}

/** The account and the client: a trusted device by a digest of its value, any other client by its address. */
function clientKey(email: string, address: string, trustedDevice: string | null): string {
  // An email holds no space, so the parts cannot run into each other.
  if (trustedDevice === null) return `${email} address ${address}`;
  return `${email} device ${createHash('sha256').update(trustedDevice).digest('base64url')}`;
}
