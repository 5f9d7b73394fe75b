import { ATTESTATION_PROVIDERS, type AttestationProvider } from 'tessera-tokens/internal/principal.js';
import type { CountOfKind, EventCountsDescription } from '../events/counts.js';
import { isAttestationReason } from './outcome.js';

/** An app's anonymous token requests of one period, by what their attestation was: what a person reads before turning `enforce` on. */
export interface AttestationPeriod {
  /** ISO 8601: the start of the minute, hour or day. */
  start: string;
  verified: Record<AttestationProvider, number>;
  missing: number;
  invalid: number;
  replayed: number;
  /** Requests of the three kinds above that `enforce` refused (it was on): part of them, not more. */
  refused: number;
  /** Requests made while attestation was off: not classified. */
  unclassified: number;
}

export interface AttestationSummary {
  periods: AttestationPeriod[];
  total: Omit<AttestationPeriod, 'start'>;
}

/** The share of classified requests that `enforce` refuses (missing, invalid or replayed); null when none was classified. */
export function refusedShare(period: Omit<AttestationPeriod, 'start'>): number | null {
  const verified = ATTESTATION_PROVIDERS.reduce((sum, provider) => sum + period.verified[provider], 0);
  const wrong = period.missing + period.invalid + period.replayed;
  return verified + wrong === 0 ? null : wrong / (verified + wrong);
}

/**
 * The app's event counts read as anonymous token requests by attestation outcome: `token.issued`
 * (anonymous) and `token.refused` (what `enforce` refused), counted under the reasons of
 * `outcome.ts`; an anonymous token issued with no such reason was issued while attestation was off.
 */
export function attestationSummary(counts: EventCountsDescription): AttestationSummary {
  const periods = counts.buckets.map(({ start, counts: kinds }) => ({ start, ...tally(kinds) }));
  return { periods, total: tally(counts.totals) };
}

function tally(kinds: readonly CountOfKind[]): Omit<AttestationPeriod, 'start'> {
  const period = {
    verified: Object.fromEntries(ATTESTATION_PROVIDERS.map((provider) => [provider, 0])) as Record<AttestationProvider, number>,
    missing: 0,
    invalid: 0,
    replayed: 0,
    refused: 0,
    unclassified: 0,
  };
  for (const kind of kinds) {
    const anonymousIssue = kind.type === 'token.issued' && kind.principal === 'anonymous';
    const refusal = kind.type === 'token.refused' && kind.attempted === 'anonymous';
    if (!anonymousIssue && !refusal) continue;
    if (!isAttestationReason(kind.reason)) {
      if (anonymousIssue) period.unclassified += kind.count;
      continue;
    }
    if (refusal) period.refused += kind.count;
    if (kind.reason.startsWith('attested_')) period.verified[kind.reason.slice('attested_'.length) as AttestationProvider] += kind.count;
    else if (kind.reason === 'attestation_missing') period.missing += kind.count;
    else if (kind.reason === 'attestation_invalid') period.invalid += kind.count;
    else period.replayed += kind.count;
  }
  return period;
}
