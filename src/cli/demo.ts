import type { CreatedApp } from '../apps/service.js';
import { tryItCommands } from '../apps/try-it.js';

/** What a newcomer sees on the first start: the demo app's keys and commands to paste. */
export function demoBanner(app: CreatedApp, baseUrl: string): string {
  const commands = tryItCommands(app, baseUrl)
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

`;
}
