import type { SecretExposure } from '../../apps/secret-exposure.js';
import type { AppRole } from '../../developers/roles.js';
import { html, type Html } from '../html.js';
import { utcTime } from '../time.js';

/**
 * The warning an app's pages show while its ClientSecret has been sent from a web page and not
 * rotated since (`lastSecretExposure`): anyone who can read that page can get admin tokens. Nothing
 * when there is no such exposure, or when a rotation followed it. For any app page: the events
 * page and the overview put it at their top. Its link leads the owner to the rotate form itself.
 */
export function secretExposureWarning(appId: string, exposure: SecretExposure | null, role?: AppRole): Html | null {
  if (exposure === null || exposure.rotatedAt !== null) return null;
  const from = [
    exposure.origin === null ? null : html`from the web page at <code>${exposure.origin}</code>`,
    exposure.clientAddress === null ? null : html` (address <code>${exposure.clientAddress}</code>)`,
  ];
  const which = exposure.secret === 'previous' ? 'the previous ClientSecret' : 'its ClientSecret';
  return html`<section class="warning" data-warning="secret-exposed" aria-labelledby="secret-exposed-heading">
<h2 id="secret-exposed-heading">The ClientSecret has leaked into a web page</h2>
<p>On ${utcTime(exposure.lastExposedAt, 'second')}, a browser sent this app's admin token request with ${which}${exposure.origin === null && exposure.clientAddress === null ? null : html`, ${from}`}. Tessera refused it, but whoever can read that page can copy the secret and get admin tokens from anywhere.</p>
<p>${
    role === 'collaborator'
      ? html`Ask the app's owner to rotate the ClientSecret (only the owner may; <a href="/portal/apps/${appId}/people">People</a> names them), then keep the new one in server-side code only.`
      : html`<strong><a href="/portal/apps/${appId}/rotate-secret">Rotate the ClientSecret</a></strong> (choose "It stops at once"), then keep the new one in server-side code only; a web page uses the AppKey for anonymous tokens.`
  }</p>
</section>`;
}
