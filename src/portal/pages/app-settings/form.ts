import type { AppConfiguration } from 'tessera-tokens/internal/apps/app.js';
import { AUDIENCE_LIMITS, MAX_LIFETIME_SECONDS, parseConfigurationChanges } from 'tessera-tokens/internal/apps/configuration.js';
import { MAX_ALLOWED_ORIGINS, MAX_ORIGIN_LENGTH, parseAllowedOrigins } from 'tessera-tokens/internal/apps/origins.js';
import { revocationKind, type RevocationKind } from '../../../apps/revoke-all.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { inLargestUnit, LIFETIME_UNITS } from '../common/lifetimes.js';

// The settings page's three forms, read from what the browser sent: the token settings (as typed,
// and as the change `AppService.configure` takes), which tokens to revoke, and the name typed to
// confirm a deletion.

/** The longest the origins' text may be: every origin at its longest, one a line. */
export const MAX_ORIGINS_TEXT = MAX_ALLOWED_ORIGINS * (MAX_ORIGIN_LENGTH + 2);

export const KIND_LABELS: Record<RevocationKind, string> = {
  admin: 'Admin tokens',
  anonymous: 'Anonymous tokens',
  all: 'All tokens, of both kinds',
};

/** The settings form as typed: lifetimes as a number and a unit, origins one a line. */
export interface SettingsForm {
  adminMax: string;
  adminMaxUnit: string;
  anonymousMax: string;
  anonymousMaxUnit: string;
  requireAppKey: boolean;
  allowedOrigins: string;
  accessTokenFormat: string;
  /** A JWT's audiences, one a line; empty: the default. */
  accessTokenAudience: string;
}

/** The longest the audiences' text may be: every audience at its longest, one a line. */
export const MAX_AUDIENCE_TEXT = AUDIENCE_LIMITS.count * (AUDIENCE_LIMITS.length + 2);

export function settingsFormOf(body: URLSearchParams): SettingsForm {
  const field = (name: string, max: number) => (body.get(name) ?? '').slice(0, max);
  return {
    adminMax: field('adminMax', 20).trim(),
    adminMaxUnit: field('adminMaxUnit', 20),
    anonymousMax: field('anonymousMax', 20).trim(),
    anonymousMaxUnit: field('anonymousMaxUnit', 20),
    requireAppKey: body.get('requireAppKey') === 'yes',
    allowedOrigins: field('allowedOrigins', MAX_ORIGINS_TEXT + 1),
    accessTokenFormat: field('accessTokenFormat', 20),
    accessTokenAudience: field('accessTokenAudience', MAX_AUDIENCE_TEXT + 1),
  };
}

/** The change the form asks for, checked by the same rules as the API's (`invalid_request` saying what is wrong). */
export function configurationOf(form: SettingsForm): Partial<AppConfiguration> {
  if (form.allowedOrigins.length > MAX_ORIGINS_TEXT) {
    throw new TesseraError('invalid_request', `The list of origins is too long: at most ${MAX_ALLOWED_ORIGINS} origins.`);
  }
  const lines = form.allowedOrigins.split(/\r?\n/).map((text, index) => ({ text: text.trim(), number: index + 1 }));
  const listed = lines.filter((line) => line.text !== '');
  const origins = parseAllowedOrigins(
    listed.map((line) => line.text),
    'Web pages allowed',
    (index) => `Line ${listed[index]!.number}`,
  );
  const audiences = form.accessTokenAudience
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (form.accessTokenAudience.length > MAX_AUDIENCE_TEXT || audiences.length > AUDIENCE_LIMITS.count) {
    throw new TesseraError('invalid_request', `The audiences of a JWT are at most ${AUDIENCE_LIMITS.count}, one a line.`);
  }
  return parseConfigurationChanges({
    adminTokenMaxLifetimeSeconds: lifetimeOf(form.adminMax, form.adminMaxUnit, 'The longest lifetime of an admin token'),
    anonymousTokenMaxLifetimeSeconds: lifetimeOf(form.anonymousMax, form.anonymousMaxUnit, 'The longest lifetime of an anonymous token'),
    requireAppKey: form.requireAppKey,
    allowedOrigins: origins,
    accessTokenFormat: form.accessTokenFormat === '' ? null : form.accessTokenFormat,
    accessTokenAudience: audiences.length === 0 ? null : audiences,
  });
}

function lifetimeOf(amount: string, unit: string, name: string): number | null {
  if (amount === '') return null;
  const size = LIFETIME_UNITS.find(([unitName]) => unitName === unit)?.[1];
  if (!/^[0-9]{1,10}$/.test(amount) || size === undefined || Number(amount) < 1 || Number(amount) * size > MAX_LIFETIME_SECONDS) {
    throw new TesseraError(
      'invalid_request',
      `${name} must be a whole number of seconds, minutes, hours or days, from 1 second to ${MAX_LIFETIME_SECONDS} seconds (about 68 years); leave it empty for no limit.`,
    );
  }
  return Number(amount) * size;
}

/** The form as the app now is: each lifetime in the largest unit it is a whole number of. */
export function formOfConfiguration(configuration: AppConfiguration): SettingsForm {
  const [adminMax, adminMaxUnit] = amountAndUnit(configuration.adminTokenMaxLifetimeSeconds);
  const [anonymousMax, anonymousMaxUnit] = amountAndUnit(configuration.anonymousTokenMaxLifetimeSeconds);
  return {
    adminMax,
    adminMaxUnit,
    anonymousMax,
    anonymousMaxUnit,
    requireAppKey: configuration.requireAppKey,
    allowedOrigins: configuration.allowedOrigins.join('\n'),
    accessTokenFormat: configuration.accessTokenFormat,
    accessTokenAudience: (configuration.accessTokenAudience ?? []).join('\n'),
  };
}

function amountAndUnit(seconds: number | null): [string, string] {
  if (seconds === null) return ['', 'hour'];
  const [amount, unit] = inLargestUnit(seconds);
  return [String(amount), unit];
}

/** The revoke-tokens form: the kind chosen and confirmed, or what is missing, in words. */
export function revocationOf(body: URLSearchParams): { kind: RevocationKind } | { mistake: string } {
  const kind = revocationKind(body.get('kind') ?? undefined);
  if (kind === undefined) return { mistake: 'Choose which tokens to revoke.' };
  if (body.get('confirm') !== 'yes') {
    return { mistake: `Tick "Yes, revoke them now" to confirm: ${KIND_LABELS[kind].toLowerCase()} of the app stop working at once.` };
  }
  return { kind };
}

/** The name typed to confirm a deletion, cut short. */
export function deletionNameOf(body: URLSearchParams): string {
  return (body.get('name') ?? '').slice(0, 200);
}
