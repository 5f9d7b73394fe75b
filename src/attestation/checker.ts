import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { addressKey } from '../limits/address-key.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { retryAfterSecondsOf, type RateLimits } from '../limits/rate-limits.js';
import type { Metrics } from '../metrics/port.js';
import { createHash } from 'node:crypto';
import { verifyPlayIntegrity, type PlayIntegrity } from './android.js';
import { verifyAssertion, verifyAttestation, type AppAttest } from './apple.js';
import type { DebugTokens } from './debug-tokens.js';
import { parseAttestationHeader } from './header.js';
import type { IssuanceRate } from './issuance-rate.js';
import type { AttestationOutcome, AttestationProblem } from './outcome.js';
import { parseChallenge, type ProofOfWork, type VerifiedPow } from './pow.js';
import { replayClaim, type AttestationStore } from './store.js';

/** Attestations sent wrong (invalid or replayed) that one client address may make per minute before the rest are refused, as failed credentials are. */
export const ATTESTATION_FAILURES_PER_ADDRESS_PER_MINUTE = 30;

/**
 * Decides what an anonymous token request's `X-Tessera-Attestation` is worth, every check made here:
 * the header is parsed, the provider verifies the payload, and a payload that verified is claimed in
 * the store so that it is accepted once on every instance (a debug token is used again and again).
 * Nothing is stored for one that did not verify; those are counted per client address, and past
 * `ATTESTATION_FAILURES_PER_ADDRESS_PER_MINUTE` a request from that address is refused before any
 * work (`429`). Knows nothing of HTTP.
 */
export class AttestationChecker {
  readonly #failures: RateLimiterAbstract | undefined;

  constructor(
    private readonly pow: ProofOfWork,
    private readonly debugTokens: DebugTokens,
    private readonly playIntegrity: Pick<PlayIntegrity, 'settingsOf'>,
    private readonly appAttest: Pick<AppAttest, 'settingsOf'>,
    private readonly claims: Pick<AttestationStore, 'claim' | 'claimSerial'>,
    private readonly keys: Pick<AttestationStore, 'findKey' | 'insertKey' | 'advanceCounter'>,
    readonly rate: IssuanceRate,
    private readonly clock: Clock,
    limits: RateLimits,
    private readonly metrics: Pick<Metrics, 'rateLimited'>,
  ) {
    this.#failures = limits.counter('attestation-failures', { points: ATTESTATION_FAILURES_PER_ADDRESS_PER_MINUTE, duration: 60 });
  }

  /** Throws `TOO_MANY_REQUESTS` if the address has sent too many wrong attestations this minute. */
  async checkAddress(address: string | null): Promise<void> {
    if (this.#failures === undefined || address === null) return;
    const used = await this.#failures.get(addressKey(address));
    if (used !== null && used.consumedPoints >= ATTESTATION_FAILURES_PER_ADDRESS_PER_MINUTE) {
      this.metrics.rateLimited('attestation_failures_per_address');
      const retryAfterSeconds = retryAfterSecondsOf(used);
      throw new TesseraError(
        'TOO_MANY_REQUESTS',
        `Too many wrong attestations from this address (more than ${ATTESTATION_FAILURES_PER_ADDRESS_PER_MINUTE} a minute): ` +
          `its anonymous token requests are refused for ${retryAfterSeconds} s, then taken again.`,
        { retryAfterSeconds },
      );
    }
  }

  async check(app: AppRecord, header: string | undefined, address: string | null): Promise<AttestationOutcome> {
    const outcome = await this.#outcome(app, header);
    if ((outcome.verdict === 'invalid' || outcome.verdict === 'replayed') && this.#failures !== undefined && address !== null) {
      // Counted, not refused here: this request gets its own answer, the next ones the 429.
      await this.#failures.penalty(addressKey(address), 1);
    }
    return outcome;
  }

  async #outcome(app: AppRecord, header: string | undefined): Promise<AttestationOutcome> {
    const presented = parseAttestationHeader(header);
    if (presented === undefined) return { verdict: 'missing' };
    if ('problem' in presented) return { verdict: 'invalid', provider: null, problem: presented.problem };
    const { provider, payload } = presented;
    switch (provider) {
      case 'pow': {
        const checked = await this.pow.verify(app, payload, this.clock.now());
        if (checked.verdict === 'invalid') return { verdict: 'invalid', provider, problem: checked.problem };
        const claimed = await this.#claimChallenge(checked);
        return claimed === true ? { verdict: 'verified', provider } : { verdict: 'replayed', provider };
      }
      case 'debug':
        return (await this.debugTokens.verify(app, payload))
          ? { verdict: 'verified', provider }
          : { verdict: 'invalid', provider, problem: 'unknown_token' };
      case 'android': {
        const settings = await this.playIntegrity.settingsOf(app.appId);
        if (settings === undefined) return { verdict: 'invalid', provider, problem: 'not_configured' };
        const checked = await verifyPlayIntegrity(settings, payload, this.clock.now());
        if (checked.verdict === 'invalid') return { verdict: 'invalid', provider, problem: checked.problem };
        const claimed = await this.claims.claim(replayClaim(checked.replayKey, checked.validUntil));
        return claimed === true ? { verdict: 'verified', provider } : { verdict: 'replayed', provider };
      }
      case 'apple':
        return this.#appAttest(app, payload);
    }
  }

  /**
   * `apple.<attestation|assertion>.<keyId>.<challenge>.<object>` (base64url each; the challenge is a
   * challenge of `GET …/attestation/challenge`, JSON): the request is bound to the challenge
   * (`clientDataHash` is the SHA-256 of its signature's 64 hex characters), which is accepted once.
   */
  async #appAttest(app: AppRecord, payload: string): Promise<AttestationOutcome> {
    const provider = 'apple';
    const invalid = (problem: AttestationProblem): AttestationOutcome => ({ verdict: 'invalid', provider, problem });
    const settings = await this.appAttest.settingsOf(app.appId);
    if (settings === undefined) return invalid('not_configured');
    const parts = payload.split('.');
    if (parts.length !== 4 || (parts[0] !== 'attestation' && parts[0] !== 'assertion')) return invalid('malformed');
    const [kind, keyIdText, challengeText, objectText] = parts as [string, string, string, string];
    const keyId = Buffer.from(keyIdText, 'base64url');
    const challenge = parseChallenge(parseJson(Buffer.from(challengeText, 'base64url').toString('utf8')));
    if (keyId.length !== 32 || challenge === undefined) return invalid('malformed');
    const now = this.clock.now();
    const bound = await this.pow.checkChallenge(app, challenge, now);
    if (bound.verdict === 'invalid') return invalid(bound.problem);
    const clientDataHash = createHash('sha256').update(challenge.signature).digest();
    const object = Buffer.from(objectText, 'base64url');
    if (kind === 'attestation') {
      const attested = verifyAttestation(settings, object, clientDataHash, keyId, now);
      if (attested.verdict !== 'verified')
        return attested.verdict === 'replayed' ? { verdict: 'replayed', provider } : invalid(attested.problem);
      if ((await this.#claimChallenge(bound)) !== true) return { verdict: 'replayed', provider };
      // A key is attested once: attesting it again is a replay of its attestation.
      if ((await this.keys.insertKey(app.appId, keyId, attested.value.publicKey, now)) !== true) return { verdict: 'replayed', provider };
      return { verdict: 'verified', provider };
    }
    const key = await this.keys.findKey(app.appId, keyId);
    if (key === undefined) return invalid('unknown_key');
    const asserted = verifyAssertion(settings, object, clientDataHash, key.publicKey, key.counter);
    if (asserted.verdict !== 'verified')
      return asserted.verdict === 'replayed' ? { verdict: 'replayed', provider } : invalid(asserted.problem);
    if ((await this.#claimChallenge(bound)) !== true) return { verdict: 'replayed', provider };
    if ((await this.keys.advanceCounter(app.appId, keyId, asserted.value)) !== true) return { verdict: 'replayed', provider };
    return { verdict: 'verified', provider };
  }

  /** Claims a challenge of this service's, so that it is accepted once: by its serial, or by its signature if it has none. */
  #claimChallenge({ serial, replayKey, validUntil }: VerifiedPow): Promise<true | undefined> {
    return serial === null ? this.claims.claim(replayClaim(replayKey, validUntil)) : this.claims.claimSerial(serial);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
