import type { CreatedApp } from '../apps/service.js';
import { curlCommands } from '../apps/snippets.js';
import type { IssuedLink } from '../developers/one-time-link.js';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';

/** The developer account a first run creates to own the demo app (docs/portal.md, "First run"). */
export const DEMO_DEVELOPER_EMAIL = 'developer@localhost';

/**
 * The first run's developer: `developer@localhost`, without a password, owning the demo app; the
 * one-time link that sets its password goes into the banner. Undefined if that account exists
 * already (an operator who emptied the store of apps but kept its accounts): it is left as it is.
 */
export async function createDemoDeveloper(tessera: Tessera, appId: string): Promise<IssuedLink | undefined> {
  let link: IssuedLink | null;
  try {
    ({ link } = await tessera.developers.create(DEMO_DEVELOPER_EMAIL, null, OPERATOR));
  } catch (error) {
    if (isTesseraError(error) && error.code === 'CONFLICT') return undefined;
    throw error;
  }
  await tessera.members.setOwner(appId, DEMO_DEVELOPER_EMAIL, OPERATOR);
  return link ?? undefined;
}

/** What a newcomer sees on the first start: the demo app's keys and commands to paste. */
export function demoBanner(app: CreatedApp, baseUrl: string, portalLink?: IssuedLink): string {
  const commands = curlCommands({ ...app, baseUrl })
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
  return `
Tessera created a demo app because the store was empty (DEMO_APP=off skips this).
The ClientSecret is shown only now; keep it on the server side.
  AppID         ${app.appId}
  AppKey        ${app.appKey}
  ClientID      ${app.clientId}
  ClientSecret  ${app.clientSecret}

Try it (paste into bash):

${commands}
${portalLink === undefined ? '' : portalBanner(portalLink, baseUrl)}
`;
}

function portalBanner(link: IssuedLink, baseUrl: string): string {
  const expires = link.expiresAt.slice(0, 10);
  return `
The developer portal: the demo app belongs to the account ${DEMO_DEVELOPER_EMAIL}. Open this link
to set its password (it works once, until ${expires}), and you are signed in:

  ${link.url ?? `${baseUrl}${link.path}`}
`;
}
