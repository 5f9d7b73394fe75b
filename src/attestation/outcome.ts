import type { AttestationProvider } from 'tessera-tokens/internal/principal.js';

/** Why an attestation sent was not accepted: said in the audit event and the `401`'s message, never more. */
export type AttestationProblem =
  | 'malformed'
  | 'unknown_provider'
  | 'too_large'
  | 'not_configured'
  | 'signature'
  | 'other_app'
  | 'expired'
  | 'solution'
  | 'integrity'
  | 'unknown_key'
  | 'unknown_token';

/** What an anonymous token request's attestation turned out to be. */
export type AttestationOutcome =
  | { verdict: 'verified'; provider: AttestationProvider }
  | { verdict: 'missing' }
  | { verdict: 'invalid'; provider: AttestationProvider | null; problem: AttestationProblem }
  | { verdict: 'replayed'; provider: AttestationProvider };

/**
 * The `reason` an anonymous token request is counted under (`token.issued` in `monitor` and
 * `enforce`, `token.refused` when `enforce` refuses it): what the portal's attestation table and
 * `tessera_anonymous_attestations_total` read.
 */
export type AttestationReason = `attested_${AttestationProvider}` | 'attestation_missing' | 'attestation_invalid' | 'attestation_replayed';

export function reasonOf(outcome: AttestationOutcome): AttestationReason {
  switch (outcome.verdict) {
    case 'verified':
      return `attested_${outcome.provider}`;
    case 'missing':
      return 'attestation_missing';
    case 'invalid':
      return 'attestation_invalid';
    case 'replayed':
      return 'attestation_replayed';
  }
}

export const ATTESTATION_REASONS: readonly AttestationReason[] = [
  'attested_pow',
  'attested_apple',
  'attested_android',
  'attested_debug',
  'attestation_missing',
  'attestation_invalid',
  'attestation_replayed',
];

export function isAttestationReason(reason: string | null): reason is AttestationReason {
  return reason !== null && (ATTESTATION_REASONS as readonly string[]).includes(reason);
}

/** What each problem means, in the `401`'s message. */
export const PROBLEM_TEXT: Record<AttestationProblem, string> = {
  malformed: 'it is not <provider>.<payload> with a payload the provider reads',
  unknown_provider: 'its provider is none of pow, apple, android, debug',
  too_large: 'it is longer than an attestation can be',
  not_configured: 'this provider is not set up for this app',
  signature: 'its challenge was not signed by this service, or its token not by the platform',
  other_app: 'it is for another app',
  expired: 'it has expired; get a new one',
  solution: 'its solution does not solve its challenge',
  integrity: 'the platform does not vouch for this app on this device',
  unknown_token: 'no debug token of this app has this value',
  unknown_key: 'this app has no App Attest key with this id: attest the key first',
};
