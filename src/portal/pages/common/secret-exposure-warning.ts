import { stillLeaked, type SecretExposure } from '../../../apps/secret-exposure.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { html, type Html } from '../../html.js';
import { utcTime } from '../../time.js';

/**
 * The warnings an app's pages show while one of its ClientSecrets (its own, or a credential's) has
 * been sent from a web page and still works (`stillLeaked`): anyone who can read that page can get
 * admin tokens. Nothing for an exposure whose secret was rotated since with no grace period left,
 * or whose credential was revoked. For any app page: the events page and the overview put them at
 * their top. Each leads to what ends that secret: the app's rotate form (for whom may rotate it), or the
 * credential's rotate and revoke pages (anyone who manages credentials).
 */
export function secretExposureWarnings(appId: string, exposures: readonly SecretExposure[], permissions?: AppPermissions): Html | null {
  const leaked = exposures.filter(stillLeaked);
  if (leaked.length === 0) return null;
  return html`${leaked.map((exposure, index) => secretExposureWarning(appId, exposure, permissions, index))}`;
}

function secretExposureWarning(appId: string, exposure: SecretExposure, permissions: AppPermissions | undefined, index: number): Html {
  const from = [
    exposure.origin === null ? null : html`from the web page at <code>${exposure.origin}</code>`,
    exposure.clientAddress === null ? null : html` (address <code>${exposure.clientAddress}</code>)`,
  ];
  const { credential } = exposure;
  const whose = credential === null ? 'The ClientSecret' : html`The ClientSecret of the credential <q>${credential.name}</q>`;
  const which =
    credential === null
      ? exposure.secret === 'previous'
        ? 'the previous ClientSecret'
        : 'its ClientSecret'
      : html`the ${exposure.secret === 'previous' ? 'previous ' : ''}ClientSecret of its credential <q>${credential.name}</q> (<code>${credential.clientId}</code>)`;
  const heading = `secret-exposed-heading${index === 0 ? '' : `-${index + 1}`}`;
  return html`<section class="warning" data-warning="secret-exposed" data-client-id="${credential?.clientId ?? ''}" aria-labelledby="${heading}">
<h2 id="${heading}">${whose} has leaked into a web page</h2>
<p>On ${utcTime(exposure.lastExposedAt, 'second')}, a browser sent this app's admin token request with ${which}${exposure.origin === null && exposure.clientAddress === null ? null : html`, ${from}`}. Tessera refused it, but whoever can read that page can copy the secret and get admin tokens from anywhere.</p>
<p>${exposure.worksUntil === null ? whatToDo(appId, exposure, permissions) : graceToEnd(appId, exposure, permissions)}</p>
</section>`;
}

/** Whether the developer may rotate the app's own ClientSecret (a page that does not say: yes). */
function mayRotateSecret(permissions: AppPermissions | undefined): boolean {
  return permissions?.may.rotate_secret ?? true;
}

/** The secret was never replaced since: rotate it (or revoke the credential). */
function whatToDo(appId: string, { credential }: SecretExposure, permissions: AppPermissions | undefined): Html {
  if (credential !== null) {
    return html`<strong><a href="/portal/apps/${appId}/credentials/${credential.clientId}/revoke">Revoke the credential</a></strong>, or <a href="/portal/apps/${appId}/credentials/${credential.clientId}/rotate">rotate its ClientSecret</a> (choose "It stops at once"); then keep the new one in server-side code only. Rotating the app's own ClientSecret does not end this one.`;
  }
  return !mayRotateSecret(permissions)
    ? html`Ask the app's owner to rotate the ClientSecret (only the owner may; <a href="/portal/apps/${appId}/people">People</a> names them), then keep the new one in server-side code only.`
    : html`<strong><a href="/portal/apps/${appId}/rotate-secret">Rotate the ClientSecret</a></strong> (choose "It stops at once"), then keep the new one in server-side code only; a web page uses the AppKey for anonymous tokens.`;
}

/** The secret was rotated with a grace period, which keeps the leaked one working: end it. */
function graceToEnd(appId: string, { credential, worksUntil }: SecretExposure, permissions: AppPermissions | undefined): Html {
  const until = utcTime(worksUntil!, 'minute');
  if (credential !== null) {
    return html`It was rotated since, with a grace period: the leaked secret still works until ${until}. <strong><a href="/portal/apps/${appId}/credentials/${credential.clientId}/rotate#end-previous-secret">End the grace period now</a></strong> once the server code has the new secret.`;
  }
  return !mayRotateSecret(permissions)
    ? html`It was rotated since, with a grace period: the leaked secret still works until ${until}. Ask the app's owner to end the grace period now (<a href="/portal/apps/${appId}/people">People</a> names them).`
    : html`It was rotated since, with a grace period: the leaked secret still works until ${until}. <strong><a href="/portal/apps/${appId}/rotate-secret#end-previous-secret">End the grace period now</a></strong> once the server code has the new secret.`;
}
