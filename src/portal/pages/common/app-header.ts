import { html, type Html } from '../../html.js';

const SECTIONS = [
  ['', 'Overview'],
  ['/settings', 'Settings'],
  ['/credentials', 'Credentials'],
  ['/attestation', 'Attestation'],
  ['/events', 'Events'],
  ['/people', 'People'],
] as const;

export type AppSection = (typeof SECTIONS)[number][1];

/** The app's name and the links to its pages, the current one marked for screen readers too. */
export function appHeader(appId: string, name: string, current: AppSection): Html {
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/portal/">Your apps</a></nav>
<h1>${name}</h1>
<nav class="tabs" aria-label="App">
  ${SECTIONS.map(([path, label]) =>
    label === current
      ? html`<a href="/portal/apps/${appId}${path}" aria-current="page">${label}</a>`
      : html`<a href="/portal/apps/${appId}${path}">${label}</a>`,
  )}
</nav>`;
}
