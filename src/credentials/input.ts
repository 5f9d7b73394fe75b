import { ACCESS_TOKEN_FORMATS, type AccessTokenFormat } from 'tessera-tokens/internal/apps/app.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { hasControlCharacters, quoted } from 'tessera-tokens/internal/text.js';
import { parseAddressList } from './addresses.js';
import { MAX_CREDENTIAL_NAME_LENGTH } from 'tessera-tokens/internal/credentials/credential.js';
import { checkScopes, MAX_SCOPES, type ScopeProblem } from 'tessera-tokens/internal/credentials/scopes.js';

/** A new credential as asked for, checked. */
export interface NewCredentialInput {
  name: string;
  scopes: string[];
  /** UNIX ms, or null for never. */
  expiresAt: number | null;
  allowFrom: string[];
  /** Null: the app's format. */
  accessTokenFormat: AccessTokenFormat | null;
}

/** The fields of a request for a new credential, as JSON gives them (the API), or as the CLI and the portal's form collect them. */
export interface NewCredentialFields {
  name?: unknown;
  scopes?: unknown;
  expiresAt?: unknown;
  allowFrom?: unknown;
  accessTokenFormat?: unknown;
}

/** An RFC 3339 date and time, with its offset (`Z` or `±hh:mm`). */
export const RFC3339_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/i;

/**
 * Checks a request for a new credential, naming the field of the first problem (`400
 * invalid_request`): a name of 1 to `MAX_CREDENTIAL_NAME_LENGTH` characters without control
 * characters; 1 to `MAX_SCOPES` well-formed scopes, each built-in or the app's own; an expiry in
 * RFC 3339 after `now`, or none; CIDRs.
 */
export function parseNewCredential(fields: NewCredentialFields, now: number): NewCredentialInput {
  return {
    name: credentialName(fields.name),
    scopes: credentialScopes(fields.scopes),
    expiresAt: credentialExpiry(fields.expiresAt, now),
    allowFrom: credentialAddresses(fields.allowFrom),
    accessTokenFormat: credentialFormat(fields.accessTokenFormat),
  };
}

function credentialFormat(value: unknown): AccessTokenFormat | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !(ACCESS_TOKEN_FORMATS as readonly string[]).includes(value)) {
    throw invalid('accessTokenFormat', `must be one of: ${ACCESS_TOKEN_FORMATS.join(', ')} (or null: the app's).`);
  }
  return value as AccessTokenFormat;
}

function credentialName(value: unknown): string {
  if (typeof value !== 'string') throw invalid('name', 'is required: a string of 1 to 100 characters.');
  const name = value.trim();
  if (name.length === 0 || name.length > MAX_CREDENTIAL_NAME_LENGTH) {
    throw invalid('name', `must be 1 to ${MAX_CREDENTIAL_NAME_LENGTH} characters.`);
  }
  if (hasControlCharacters(name)) throw invalid('name', 'must not contain control characters (newlines, tabs, escape sequences).');
  return name;
}

function credentialScopes(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.some((scope) => typeof scope !== 'string')) {
    throw invalid('scopes', 'is required: a list of at least one scope, such as ["events:read"].');
  }
  if (value.length > MAX_SCOPES) throw invalid('scopes', `may name at most ${MAX_SCOPES} scopes.`);
  const checked = checkScopes(value as string[]);
  if ('problem' in checked) throw invalid('scopes', scopeProblemText(checked.problem));
  return checked.scopes;
}

/** What is wrong with a scope, in words (`scopes` of a credential, `scope` of a token request). */
export function scopeProblemText(problem: ScopeProblem | { kind: 'not allowed'; scope: string }): string {
  switch (problem.kind) {
    case 'too many':
      return `may name at most ${MAX_SCOPES} scopes.`;
    case 'malformed':
      return `has ${quoted(problem.scope)}, which is not a scope: lower case, [a-z][a-z0-9_.:-]*, at most 64 characters.`;
    case 'unknown':
      return `has ${quoted(problem.scope)}, which is not one of Tessera's scopes (app:read, configuration:read, configuration:write, events:read, tokens:introspect, tokens:revoke, credentials:manage, webhooks:manage); an app's own scopes must not start with app:, configuration:, events:, tokens:, credentials: or webhooks:.`;
    case 'not allowed':
      return `has ${quoted(problem.scope)}, which the credential does not allow.`;
  }
}

function credentialExpiry(value: unknown, now: number): number | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || !RFC3339_DATE_TIME.test(value)) {
    throw invalid('expiresAt', 'must be an RFC 3339 date and time, such as 2027-01-31T00:00:00Z.');
  }
  const instant = Date.parse(value);
  if (Number.isNaN(instant)) throw invalid('expiresAt', 'must be an RFC 3339 date and time, such as 2027-01-31T00:00:00Z.');
  if (instant <= now) throw invalid('expiresAt', 'is in the past: a credential that has expired issues no token.');
  return instant;
}

function credentialAddresses(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string')) {
    throw invalid('allowFrom', 'must be a list of CIDRs, such as ["203.0.113.0/24", "2001:db8::/32"].');
  }
  const checked = parseAddressList(value as string[]);
  if ('problem' in checked) {
    throw invalid(
      'allowFrom',
      checked.problem.startsWith('at most')
        ? `may have ${checked.problem}.`
        : `has ${quoted(checked.problem)}, which is not an IPv4 or IPv6 CIDR with no bits set past its prefix (such as 203.0.113.0/24).`,
    );
  }
  return checked.cidrs;
}

function invalid(field: string, problem: string): TesseraError {
  return new TesseraError('invalid_request', `${field} ${problem}`, { field });
}
