import type { AppAction, AppPermissions } from '../../../developers/roles.js';
import { html, type Html } from '../../html.js';

/** The app's pages: the path under the app, the tab's name, and what a developer must be allowed to see it. */
const SECTIONS = [
  ['', 'Overview', 'view_app'],
  ['/settings', 'Settings', 'view_app'],
  ['/credentials', 'Credentials', 'view_app'],
  ['/attestation', 'Attestation', 'view_app'],
  ['/events', 'Events', 'view_app'],
  ['/people', 'People', 'view_app'],
  ['/webhooks', 'Webhooks', 'manage_webhooks'],
] as const satisfies readonly (readonly [string, string, AppAction])[];

export type AppSection = (typeof SECTIONS)[number][1];

/** The app's name and the links to the pages the developer may open, the current one marked for screen readers too. */
export function appHeader(appId: string, name: string, current: AppSection, permissions: AppPermissions): Html {
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/portal/">Your apps</a></nav>
<h1>${name}</h1>
<nav class="tabs" aria-label="App">
  ${SECTIONS.filter(([, , action]) => permissions.may[action]).map(([path, label]) =>
    label === current
      ? html`<a href="/portal/apps/${appId}${path}" aria-current="page">${label}</a>`
      : html`<a href="/portal/apps/${appId}${path}">${label}</a>`,
  )}
</nav>`;
}
