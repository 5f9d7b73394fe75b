/** What the rotation of a secret shows in the portal, for the app's ClientSecret and for a credential's: the grace period asked for, and the new secret shown once. */
import { MAX_SECRET_GRACE_SECONDS, parseGraceSeconds } from '../../../apps/secret-rotation.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { html, type Html } from '../../html.js';
import { utcTime } from '../../time.js';
import { csrfField } from '../../layout.js';
import { keyRow } from './access-keys.js';

/** The grace periods offered, besides "none" and a number of seconds typed. */
export const GRACE_CHOICES = [
  ['3600', 'For 1 hour'],
  ['86400', 'For 1 day'],
  ['604800', 'For 7 days'],
] as const;

/** What a rotation form had for its grace period: the choice (`none`, seconds, `custom`) and the seconds typed. */
export interface GraceForm {
  grace: string;
  graceSeconds: string;
}

/**
 * How long the replaced secret keeps working, as a rotation form offers it (the app's ClientSecret,
 * a credential's): none, a choice, or seconds typed. `secret` names it in the legend; `hint` is
 * what a grace period is for there.
 */
export function graceFieldset(form: GraceForm, secret: string, hint: Html | string): Html {
  const radio = (value: string, label: string) => html`<div class="choice">
      <input type="radio" id="grace-${value}" name="grace" value="${value}"${form.grace === value ? html` checked` : null}>
      <label for="grace-${value}">${label}</label>
    </div>`;
  return html`<fieldset>
    <legend>How long does the current ${secret} keep working?</legend>
    ${radio('none', 'It stops at once')}
    ${GRACE_CHOICES.map(([value, label]) => radio(value, label))}
    ${radio('custom', 'For another period:')}
    <div class="indented">
      <label for="grace-seconds">Seconds, from 1 to ${MAX_SECRET_GRACE_SECONDS} (30 days)</label>
      <input type="text" id="grace-seconds" name="graceSeconds" inputmode="numeric" pattern="[0-9]*" maxlength="8" autocomplete="off" value="${form.graceSeconds}">
    </div>
    <p class="hint">${hint}</p>
  </fieldset>`;
}

/** A rotation form's grace period as typed, cut short; `absent` for a choice the form did not send. */
export function graceFormOf(body: URLSearchParams, absent = ''): GraceForm {
  return {
    grace: (body.get('grace') ?? absent).slice(0, 20),
    graceSeconds: (body.get('graceSeconds') ?? '').trim().slice(0, 20),
  };
}

/** The grace period a rotation form asks for, in seconds; undefined for none; `invalid_request` for a choice that is not one. */
export function graceSecondsOf({ grace, graceSeconds }: GraceForm, secret: string): number | undefined {
  if (grace === 'custom') return parseGraceSeconds(graceSeconds);
  if (graceSeconds !== '') {
    throw new TesseraError('invalid_request', 'You typed a number of seconds: choose "For another period" to use it, or empty the field.');
  }
  if (grace === 'none') return undefined;
  const choice = GRACE_CHOICES.find(([seconds]) => seconds === grace);
  if (choice === undefined) throw new TesseraError('invalid_request', `Choose how long the current ${secret} keeps working.`);
  return Number(choice[0]);
}

/** The ClientID (unchanged) and the new secret, shown once. */
export function rotatedSecretKeys(rotated: { clientId: string; clientSecret: string }): Html {
  return html`<dl class="keys">
  ${keyRow('ClientID', 'clientId', rotated.clientId, 'Unchanged.')}
  ${keyRow('ClientSecret', 'clientSecret', rotated.clientSecret, 'Secret: server code only. Shown once.')}
</dl>`;
}

/** What became of the replaced secret (named `secret`): it stopped, or works until the end of its grace period. */
export function replacedSecretOutcome(previousSecretValidUntil: string | null, secret: string): Html {
  return previousSecretValidUntil === null
    ? html`The previous ${secret} stopped working.`
    : html`The previous ${secret} keeps working until ${utcTime(previousSecretValidUntil, 'second')}.`;
}

/** What a rotation did: a sentence for one thing, a list for several (a list of one reads as a mistake). */
export function rotationOutcome(items: readonly (Html | null)[]): Html {
  const said = items.filter((item): item is Html => item !== null);
  if (said.length === 1) return html`<p class="outcome">${said[0]}</p>`;
  return html`<ul class="outcome">
  ${said.map((item) => html`<li>${item}</li>`)}
</ul>`;
}

/** What an end-of-grace form's answer says, by the `ended` of the rotate page's address (nothing else is shown from it). */
export const ENDED_NOTICES: Record<string, string> = {
  yes: 'The previous secret is refused from now on. Tokens issued with it keep working until they expire.',
  none: 'No previous secret was working: nothing changed.',
};

/** The notice for a rotate page's `ended` query parameter, or nothing. */
export function endedNotice(ended: unknown): Html | null {
  const text = typeof ended === 'string' && Object.hasOwn(ENDED_NOTICES, ended) ? ENDED_NOTICES[ended] : undefined;
  return text === undefined ? null : html`<p class="notice success" role="status" data-ended="${ended as string}">${text}</p>`;
}

/**
 * While the secret a rotation replaced still works (its grace period), a form that ends it now:
 * once every server has the new secret, or at once when the old one turns out to have leaked.
 * `action` is where it is sent; `secret` names it.
 */
export function endPreviousSecretForm(action: string, csrfToken: string, validUntil: string, secret: string): Html {
  return html`<section id="end-previous-secret" class="end-previous-secret" aria-labelledby="end-previous-secret-heading" data-previous-secret-valid-until="${validUntil}">
<h3 id="end-previous-secret-heading">End the grace period now</h3>
<p>The ${secret} before the current one still works, until ${utcTime(validUntil, 'second')}, kept by the last rotation. Once every server uses the new one, or at once if the old one leaked, end it: it is refused from then on, and the current one stays as it is.</p>
<form method="post" action="${action}">
  ${csrfField(csrfToken)}
  <button type="submit" class="danger">End the previous ${secret} now</button>
</form>
</section>`;
}
