import { TesseraError } from '../errors.js';
import { quoted } from '../text.js';
import { ACCESS_TOKEN_FORMATS, ATTESTATION_MODES, DEFAULT_APP_CONFIGURATION, POW_ALGORITHMS, type AppConfiguration } from './app.js';
import { parseAllowedOrigins } from './origins.js';

/**
 * The longest maximum lifetime that can be set: what the established service answers as
 * `expires_in` for a token that never expires (`NEVER_EXPIRES_IN`).
 */
export const MAX_LIFETIME_SECONDS = 2147483646;

type FieldParser = (value: unknown, name: string) => AppConfiguration[keyof AppConfiguration];

const lifetime: FieldParser = (value, name) => {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIFETIME_SECONDS) {
    throw invalid(`${name} must be null (no maximum) or a whole number of seconds from 1 to ${MAX_LIFETIME_SECONDS}.`);
  }
  return value;
};

/** The limits of the proof of work's settings: an honest phone must still solve it in seconds at the most. */
export const POW_LIMITS = { cost: { min: 1, max: 10_000 }, maxAttempts: { min: 100, max: 10_000_000 } } as const;

/** A whole number from `min` to `max`; null: the default of the field. */
function wholeNumber(min: number, max: number, orNull: 'default' | 'null'): FieldParser {
  return (value, name) => {
    if (value === null) return orNull === 'null' ? null : DEFAULT_APP_CONFIGURATION[name as keyof AppConfiguration];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw invalid(`${name} must be ${orNull === 'null' ? 'null or ' : ''}a whole number from ${min} to ${max}.`);
    }
    return value;
  };
}

/** One of `choices`; null: the default of the field. */
function oneOf(choices: readonly string[]): FieldParser {
  return (value, name) => {
    if (value === null) return DEFAULT_APP_CONFIGURATION[name as keyof AppConfiguration];
    if (typeof value !== 'string' || !choices.includes(value)) throw invalid(`${name} must be one of: ${choices.join(', ')}.`);
    return value as AppConfiguration[keyof AppConfiguration];
  };
}

function flag(value: unknown, name: string): AppConfiguration[keyof AppConfiguration] {
  // null: back to the seed's behaviour.
  if (value === null) return DEFAULT_APP_CONFIGURATION[name as keyof AppConfiguration];
  if (typeof value !== 'boolean') throw invalid(`${name} must be true or false.`);
  return value;
}

/** The most audiences an app may set, and their longest. */
export const AUDIENCE_LIMITS = { count: 5, length: 100 } as const;
const AUDIENCE = /^[\x21-\x7e]+$/;

function audience(value: unknown, name: string): AppConfiguration[keyof AppConfiguration] {
  if (value === null) return null;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > AUDIENCE_LIMITS.count ||
    !value.every((item) => typeof item === 'string' && item.length <= AUDIENCE_LIMITS.length && AUDIENCE.test(item))
  ) {
    throw invalid(
      `${name} must be null (tessera:app:{appId}) or a list of 1 to ${AUDIENCE_LIMITS.count} audiences, each 1 to ${AUDIENCE_LIMITS.length} printable characters without spaces.`,
    );
  }
  return [...new Set(value as string[])];
}

const FIELDS: Record<keyof AppConfiguration, FieldParser> = {
  adminTokenMaxLifetimeSeconds: lifetime,
  anonymousTokenMaxLifetimeSeconds: lifetime,
  requireAppKey: flag,
  allowedOrigins: parseAllowedOrigins,
  anonymousAttestation: oneOf(ATTESTATION_MODES),
  basicAnonymous: flag,
  powAlgorithm: oneOf(POW_ALGORITHMS),
  powCost: wholeNumber(POW_LIMITS.cost.min, POW_LIMITS.cost.max, 'default'),
  powMaxAttempts: wholeNumber(POW_LIMITS.maxAttempts.min, POW_LIMITS.maxAttempts.max, 'default'),
  powRisesAbovePerMinute: wholeNumber(1, 1_000_000, 'null'),
  accessTokenFormat: oneOf(ACCESS_TOKEN_FORMATS),
  accessTokenAudience: audience,
};

/**
 * Checks a configuration change (`PATCH /api/apps/{appId}/configuration`, JSON merge patch): an
 * object with at least one known field, each of the right type; unknown fields are an error.
 */
export function parseConfigurationChanges(body: unknown): Partial<AppConfiguration> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalid('The body must be a JSON object of configuration fields.');
  }
  const entries = Object.entries(body);
  if (entries.length === 0) throw invalid(`Send at least one of: ${Object.keys(FIELDS).join(', ')}.`);
  const changes: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    if (!Object.hasOwn(FIELDS, name)) {
      throw invalid(`Unknown configuration field ${quoted(name)}; the fields are: ${Object.keys(FIELDS).join(', ')}.`);
    }
    changes[name] = FIELDS[name as keyof AppConfiguration](value, name);
  }
  return changes;
}

function invalid(message: string): TesseraError {
  return new TesseraError('invalid_request', message);
}
