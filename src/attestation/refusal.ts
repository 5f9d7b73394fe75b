import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { PROBLEM_TEXT, type AttestationOutcome } from './outcome.js';

/** The `401` of an anonymous token request that `enforce` refuses: `ATTESTATION_REQUIRED` (none sent) or `ATTESTATION_INVALID`. */
export function attestationRefusal(outcome: Exclude<AttestationOutcome, { verdict: 'verified' }>, appId: string): TesseraError {
  switch (outcome.verdict) {
    case 'missing':
      return new TesseraError(
        'ATTESTATION_REQUIRED',
        'This app gives anonymous tokens only to requests that prove they come from the app: send X-Tessera-Attestation: <provider>.<payload> ' +
          `(a proof of work: GET /api/apps/${appId}/attestation/challenge).`,
      );
    case 'replayed':
      return new TesseraError('ATTESTATION_INVALID', 'This attestation was used already: each is accepted once; get a new one.');
    case 'invalid':
      return new TesseraError('ATTESTATION_INVALID', `The attestation is not valid: ${PROBLEM_TEXT[outcome.problem]}.`);
  }
}
