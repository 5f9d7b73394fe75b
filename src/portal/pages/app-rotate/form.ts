import type { RotationOptions } from '../../../apps/service.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { graceFormOf, graceSecondsOf, type GraceForm } from '../common/rotation.js';

// The ClientSecret's rotation form, read from what the browser sent: as typed (to show again beside
// a mistake, never a secret: the form has none), and as `AppService.rotateSecret` takes it.

export interface RotationForm extends GraceForm {
  revokeAdminTokens: boolean;
  clientId: string;
}

/** A grace period is preselected: stopping at once is for a secret that leaked, and is a choice to make, not a default. */
export const EMPTY_FORM: RotationForm = { grace: '3600', graceSeconds: '', revokeAdminTokens: false, clientId: '' };

/** The form as typed; a form without a grace period chosen asks for none. */
export function rotationFormOf(body: URLSearchParams): RotationForm {
  return {
    ...graceFormOf(body, 'none'),
    revokeAdminTokens: body.get('revokeAdminTokens') === 'yes',
    clientId: (body.get('clientId') ?? '').trim().slice(0, 200),
  };
}

/** The rotation the form asks for, once the ClientID typed is the app's (`invalid_request` otherwise, and for a grace period that is not one). */
export function rotationOptions(form: RotationForm, clientId: string): RotationOptions {
  if (form.clientId !== clientId) {
    throw new TesseraError(
      'invalid_request',
      'That is not the ClientID of this app: type it exactly as shown, to confirm that you mean this app.',
    );
  }
  const graceSeconds = graceSecondsOf(form, 'ClientSecret');
  return graceSeconds === undefined
    ? { revokeAdminTokens: form.revokeAdminTokens }
    : { revokeAdminTokens: form.revokeAdminTokens, graceSeconds };
}
