import { MAX_ALLOWED_ADDRESSES } from '../../../credentials/addresses.js';
import { MAX_CREDENTIAL_NAME_LENGTH } from 'tessera-tokens/internal/credentials/credential.js';
import { RFC3339_DATE_TIME, type NewCredentialFields } from '../../../credentials/input.js';
import { BUILT_IN_SCOPES, MAX_SCOPE_LENGTH, MAX_SCOPES } from 'tessera-tokens/internal/credentials/scopes.js';
import { fieldMistakeOf, FormMistake, type FieldMistake } from '../common/mistakes.js';
import { graceFormOf, type GraceForm } from '../common/rotation.js';

// The credentials pages' forms, read from what the browser sent: the new-credential form as typed
// (kept to show again beside a mistake) and as `CredentialService.create` takes it, the rotation
// form, and a refusal in the form's words, by the error's code and the field it names.

/** The new-credential form's fields, as typed: its own scopes space-separated, its addresses one a line. */
export interface CredentialForm {
  name: string;
  scopes: string[];
  ownScopes: string;
  expiresAt: string;
  allowFrom: string;
}

export const EMPTY_FORM: CredentialForm = { name: '', scopes: [], ownScopes: '', expiresAt: '', allowFrom: '' };

/** The field a mistake is about, for the words and the focus. */
export type Field = 'name' | 'scopes' | 'expiresAt' | 'allowFrom';
const FIELD_WORDS: Record<Field, string> = {
  name: 'The name',
  scopes: 'The list of scopes',
  expiresAt: 'The expiry',
  allowFrom: 'The list of allowed addresses',
};

export type Mistake = FieldMistake<Field>;

/** The longest the typed fields may be: every scope and every address at its longest, and room to spare. */
export const MAX_OWN_SCOPES_TEXT = MAX_SCOPES * (MAX_SCOPE_LENGTH + 1);
export const MAX_ADDRESSES_TEXT = MAX_ALLOWED_ADDRESSES * 52;

/** `2027-01-31T09:30` (what `<input type=datetime-local>` sends), to the second or less too: taken as UTC. */
const LOCAL_DATE_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?$/;

/** The new-credential form as typed, each field cut short where nothing longer could be right. */
export function credentialFormOf(body: URLSearchParams): CredentialForm {
  const field = (name: string, max: number) => (body.get(name) ?? '').slice(0, max);
  return {
    name: field('name', MAX_CREDENTIAL_NAME_LENGTH * 4),
    scopes: body
      .getAll('scope')
      .slice(0, BUILT_IN_SCOPES.length * 2)
      .map((scope) => scope.slice(0, MAX_SCOPE_LENGTH + 1)),
    ownScopes: field('ownScopes', MAX_OWN_SCOPES_TEXT + 1),
    expiresAt: field('expiresAt', 40).trim(),
    allowFrom: field('allowFrom', MAX_ADDRESSES_TEXT + 1),
  };
}

/** The new credential's fields, as `CredentialService.create` takes them; a mistake it would not name well, in the form's words. */
export function credentialFields(form: CredentialForm): NewCredentialFields {
  if (form.ownScopes.length > MAX_OWN_SCOPES_TEXT) throw new FormMistake('scopes', `A credential may have at most ${MAX_SCOPES} scopes.`);
  if (form.allowFrom.length > MAX_ADDRESSES_TEXT) {
    throw new FormMistake('allowFrom', `The list of allowed addresses may have at most ${MAX_ALLOWED_ADDRESSES} entries.`);
  }
  const scopes = [...form.scopes, ...form.ownScopes.split(/\s+/).filter((scope) => scope !== '')];
  if (scopes.length === 0) {
    throw new FormMistake('scopes', "Choose at least one scope: tick one of Tessera's, or type one of the app's own.");
  }
  const allowFrom = form.allowFrom
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return { name: form.name, scopes, expiresAt: expiryOf(form.expiresAt), allowFrom };
}

/** The expiry typed, as RFC 3339: a date and time without a zone is UTC, as the page says. */
function expiryOf(typed: string): string | undefined {
  if (typed === '') return undefined;
  const local = LOCAL_DATE_TIME.exec(typed);
  if (local !== null) return `${local[1]}${local[2] ?? ':00'}Z`;
  if (RFC3339_DATE_TIME.test(typed)) return typed;
  throw new FormMistake('expiresAt', 'The expiry must be a date and a time in UTC, such as 2027-01-31T09:30, or nothing.');
}

/**
 * The status and the words of a mistake in the new-credential form, or of a refusal it is shown
 * with, by the error's code: `invalid_request` (the field it names, in the form's words: the
 * service's message starts with the API's name of it, `expiresAt is in the past…`), `FORBIDDEN` (a
 * collaborator who gave `credentials:manage` all the same), `CONFLICT` (as many credentials as an
 * app may have). Anything else is thrown on.
 */
export function mistakeOf(error: unknown): [number, Mistake] {
  return fieldMistakeOf(error, FIELD_WORDS, ['FORBIDDEN', 'CONFLICT']);
}

/** The rotation form as typed: its grace period, each field cut short. */
export function rotationFormOf(body: URLSearchParams): GraceForm {
  return graceFormOf(body);
}
