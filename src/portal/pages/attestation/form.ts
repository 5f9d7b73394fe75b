import { ATTESTATION_MODES, POW_ALGORITHMS, type AppConfiguration } from 'tessera-tokens/internal/apps/app.js';
import { parseConfigurationChanges } from 'tessera-tokens/internal/apps/configuration.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

// The attestation page's forms, read from what the browser sent: the attestation settings (as typed,
// and as the change `AppService.configure` takes) and a new debug token's name.

export interface AttestationForm {
  mode: string;
  basicAnonymous: boolean;
  powAlgorithm: string;
  powCost: string;
  powMaxAttempts: string;
  powRisesAbovePerMinute: string;
}

export function attestationFormOf(body: URLSearchParams): AttestationForm {
  const field = (name: string) => (body.get(name) ?? '').slice(0, 40).trim();
  return {
    mode: field('anonymousAttestation'),
    basicAnonymous: body.get('basicAnonymous') === 'yes',
    powAlgorithm: field('powAlgorithm'),
    powCost: field('powCost'),
    powMaxAttempts: field('powMaxAttempts'),
    powRisesAbovePerMinute: field('powRisesAbovePerMinute'),
  };
}

/** The change the form asks for, checked by the API's rules (`invalid_request` saying what is wrong, in the field's words). */
export function attestationChangesOf(form: AttestationForm): Partial<AppConfiguration> {
  if (!(ATTESTATION_MODES as readonly string[]).includes(form.mode)) throw invalid('Choose off, monitor or enforce.');
  if (!(POW_ALGORITHMS as readonly string[]).includes(form.powAlgorithm)) throw invalid('Choose one of the algorithms listed.');
  return parseConfigurationChanges({
    anonymousAttestation: form.mode,
    basicAnonymous: form.basicAnonymous,
    powAlgorithm: form.powAlgorithm,
    powCost: wholeNumber(form.powCost, 'The cost of one attempt'),
    powMaxAttempts: wholeNumber(form.powMaxAttempts, 'The most attempts a challenge needs'),
    powRisesAbovePerMinute:
      form.powRisesAbovePerMinute === '' ? null : wholeNumber(form.powRisesAbovePerMinute, 'The rate the cost rises from'),
  });
}

function wholeNumber(text: string, name: string): number {
  if (!/^[0-9]{1,9}$/.test(text)) throw invalid(`${name} must be a whole number.`);
  return Number(text);
}

function invalid(message: string): TesseraError {
  return new TesseraError('invalid_request', message);
}

export function formOfConfiguration(configuration: AppConfiguration): AttestationForm {
  return {
    mode: configuration.anonymousAttestation,
    basicAnonymous: configuration.basicAnonymous,
    powAlgorithm: configuration.powAlgorithm,
    powCost: String(configuration.powCost),
    powMaxAttempts: String(configuration.powMaxAttempts),
    powRisesAbovePerMinute: configuration.powRisesAbovePerMinute === null ? '' : String(configuration.powRisesAbovePerMinute),
  };
}

/** A new debug token's name as typed, cut short (the service says what is wrong with it). */
export function debugTokenNameOf(body: URLSearchParams): string {
  return (body.get('name') ?? '').slice(0, 200);
}
