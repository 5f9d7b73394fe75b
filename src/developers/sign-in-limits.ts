import { createHash } from 'node:crypto';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { addressKey } from '../limits/address-key.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { tooManyRequests, waitInWords, type CounterOptions, type RateLimits } from '../limits/rate-limits.js';
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

/** An attempt that the limits let through: its points are taken, to be given back if it succeeds. */
export interface AdmittedAttempt {
  /**
   * The attempt succeeded: its points are given back, and this client's failures on the account
   * are forgotten (not the account's or the address's).
   */
  succeeded(): Promise<void>;
}

export interface SignInLimits {
  /**
   * Takes this attempt's point from every counter that holds it, before any password is checked,
   * and throws `TOO_MANY_REQUESTS` (giving them back) if any is over its limit. Points are taken
   * first so that attempts sent at the same time cannot all pass a check made before any of them
   * is counted: at most a limit's worth of them reach the password hash. A failed attempt keeps
   * its points.
   */
  admit(attempt: SignInAttempt): Promise<AdmittedAttempt>;
}

const NOTHING_TO_GIVE_BACK: AdmittedAttempt = { succeeded: async () => {} };

export const NO_SIGN_IN_LIMITS: SignInLimits = {
  admit: async () => NOTHING_TO_GIVE_BACK,
};

interface Counted {
  limiter: RateLimiterAbstract;
  key: string;
  points: number;
}

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

  /** The client's own counters (its address, and itself on the account), and the account's, if it holds this attempt. */
  const counted = (attempt: SignInAttempt): { own: Counted[]; account: Counted | undefined } => {
    const address = attempt.clientAddress === null ? '-' : addressKey(attempt.clientAddress);
    const own = [{ limiter: perAddress, key: address, points: settings.failuresPerAddress.points }];
    if (attempt.email === undefined) return { own, account: undefined };
    own.push({
      limiter: perClient,
      key: clientKey(attempt.email, address, attempt.trustedDevice),
      points: settings.failuresPerAccountAndClient.points,
    });
    const account =
      attempt.trustedDevice === null ? { limiter: perAccount, key: attempt.email, points: settings.failuresPerAccount.points } : undefined;
    return { own, account };
  };
  const giveBack = (taken: Counted[]) => Promise.all(taken.map(({ limiter, key }) => limiter.reward(key, 1)));
  /** Takes a point from each; if any is then over its limit, gives them all back and throws. */
  const take = async (counters: Counted[]): Promise<void> => {
    const states = await Promise.all(counters.map(({ limiter, key }) => limiter.penalty(key, 1)));
    const over = states.find((state, index) => state.consumedPoints > counters[index]!.points);
    if (over === undefined) return;
    await giveBack(counters);
    metrics.rateLimited('sign_in');
    const refusal = tooManyRequests(over);
    const wait = waitInWords(refusal.details.retryAfterSeconds ?? 1);
    throw new TesseraError('TOO_MANY_REQUESTS', `Too many failed attempts: try again in ${wait}.`, refusal.details);
  };

  return {
    async admit(attempt) {
      const { own, account } = counted(attempt);
      await take(own);
      // The account's point is taken only once the client's own limits let it through: a client
      // past its own limit does not use up the account's, so that one client alone cannot lock the
      // account's other clients out.
      if (account !== undefined) {
        try {
          await take([account]);
        } catch (error) {
          await giveBack(own);
          throw error;
        }
      }
      const taken = account === undefined ? own : [...own, account];
      return {
        async succeeded() {
          const [address, client, ...rest] = taken;
          await Promise.all([giveBack([address!, ...rest]), client === undefined ? undefined : client.limiter.delete(client.key)]);
        },
      };
    },
  };
}

/** The account and the client: a trusted device by a digest of its value, any other client by its address. */
function clientKey(email: string, address: string, trustedDevice: string | null): string {
  // An email holds no space, so the parts cannot run into each other.
  if (trustedDevice === null) return `${email} address ${address}`;
  return `${email} device ${createHash('sha256').update(trustedDevice).digest('base64url')}`;
}
