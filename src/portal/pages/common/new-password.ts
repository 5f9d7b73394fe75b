import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../../developers/password-rules.js';
import { html, type Html } from '../../html.js';

/**
 * `maxlength` counts UTF-16 units, the rules code points after NFKC: an emoji is two units, so the
 * field allows what the rules might accept and the server says the rest. No `minlength`, for the same reason.
 */
export const PASSWORD_INPUT_MAX_LENGTH = MAX_PASSWORD_LENGTH * 4;

/** What the new-password fields say of the rules (`password-rules.ts`). */
const PASSWORD_RULES_HINT = `${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters; any characters, spaces too. A few words you remember make a good one.`;

/** A new password's fields (`password`, then `repeat`), with the rules under the first. */
export function newPasswordFields({
  label,
  repeatLabel,
  autofocus = false,
}: {
  label: string;
  repeatLabel: string;
  autofocus?: boolean;
}): Html {
  return html`<label for="password">${label}</label>
  <input id="password" name="password" type="password" autocomplete="new-password" required maxlength="${PASSWORD_INPUT_MAX_LENGTH}" aria-describedby="password-rules"${autofocus ? html` autofocus` : null}>
  <p class="hint field-hint" id="password-rules">${PASSWORD_RULES_HINT}</p>
  <label for="repeat">${repeatLabel}</label>
  <input id="repeat" name="repeat" type="password" autocomplete="new-password" required maxlength="${PASSWORD_INPUT_MAX_LENGTH}">`;
}

/** A new password typed twice: the password, and whether the repeat is the same. */
export function newPasswordOf(body: URLSearchParams): { password: string; same: boolean } {
  const password = body.get('password') ?? '';
  return { password, same: password === (body.get('repeat') ?? '') };
}
