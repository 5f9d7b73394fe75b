import { ATTESTATION_PROVIDERS, type AttestationProvider } from 'tessera-tokens/internal/principal.js';
import type { AttestationProblem } from './outcome.js';

/** The header an anonymous token request carries its attestation in: `<provider>.<payload>`. */
export const ATTESTATION_HEADER = 'x-tessera-attestation';

/**
 * The longest header accepted: room for an App Attest attestation object (about 5.5 KB, 7.3 KB in
 * base64) under Node's 16 KiB limit of all headers.
 */
export const MAX_ATTESTATION_LENGTH = 10_240;

/** What a provider's payload may be made of: base64, base64url and a JWE's dots. */
const PAYLOAD = /^[A-Za-z0-9+/=_.-]+$/;

export interface PresentedAttestation {
  provider: AttestationProvider;
  payload: string;
}

/** The header split into its provider and payload; undefined when absent; a problem when it cannot be one. */
export function parseAttestationHeader(value: string | undefined): PresentedAttestation | { problem: AttestationProblem } | undefined {
  if (value === undefined) return undefined;
  if (value.length > MAX_ATTESTATION_LENGTH) return { problem: 'too_large' };
  const dot = value.indexOf('.');
  if (dot <= 0) return { problem: 'malformed' };
  const provider = value.slice(0, dot);
  if (!(ATTESTATION_PROVIDERS as readonly string[]).includes(provider)) return { problem: 'unknown_provider' };
  const payload = value.slice(dot + 1);
  if (!PAYLOAD.test(payload)) return { problem: 'malformed' };
  return { provider: provider as AttestationProvider, payload };
}
