import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { addressKey } from './address-key.js';
import { tooManyRequests, waitInWords, type CounterOptions, type RateLimits } from './rate-limits.js';

/**
 * How often anyone may have a mail sent by asking for it (a "Forgot your password?" link, a
 * confirmation link sent again): 5 an hour to one address, and 20 an hour from one client address,
 * whatever the addresses. Counted whether or not the address has an account, so that the answer
 * tells nothing of it; counted where the other limits are (in memory, or shared in Redis), and not
 * at all with `RATE_LIMITS=off` (the outbox's own bounds still hold).
 */
export interface MailRequestLimitSettings {
  perAddress: CounterOptions;
  perClient: CounterOptions;
}

export const DEFAULT_MAIL_REQUEST_LIMITS: Readonly<MailRequestLimitSettings> = Object.freeze({
  perAddress: { points: 5, duration: 3600 },
  perClient: { points: 20, duration: 3600 },
});

export class MailRequestLimits {
  readonly #perAddress: RateLimiterAbstract | undefined;
  readonly #perClient: RateLimiterAbstract | undefined;

  constructor(
    limits: RateLimits,
    settings: MailRequestLimitSettings = DEFAULT_MAIL_REQUEST_LIMITS,
    /** Told of each refusal (the metrics' `mail_requests` limit). */
    private readonly onRefused: () => void = () => {},
  ) {
    this.#perAddress = limits.counter('mail-requests-by-address', settings.perAddress);
    this.#perClient = limits.counter('mail-requests-by-client', settings.perClient);
  }

  /** Takes one request for mail to `email` from `clientAddress`; `TOO_MANY_REQUESTS` past a limit. */
  async take(email: string, clientAddress: string | null): Promise<void> {
    const client = clientAddress === null ? '-' : addressKey(clientAddress);
    try {
      await Promise.all([this.#perClient?.consume(client), this.#perAddress?.consume(email)]);
    } catch (rejection) {
      const refusal = tooManyRequests(rejection);
      this.onRefused();
      const wait = waitInWords(refusal.details.retryAfterSeconds ?? 1);
      throw new TesseraError('TOO_MANY_REQUESTS', `Too many mails asked for: try again in ${wait}.`, refusal.details);
    }
  }
}
