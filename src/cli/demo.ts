import type { CreatedApp } from '../apps/service.js';

/** What a newcomer sees on the first start: the demo app's keys and commands to paste. */
export function demoBanner(app: CreatedApp, baseUrl: string): string {
  const tokenRequest = (clientId: string, clientSecret: string) =>
    `curl -s -u '${app.appId}:anything' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"grant_type":"client_credentials","client_id":"${clientId}","client_secret":"${clientSecret}"}' \\\n` +
    `    "$BASE/api/apps/${app.appId}/oauth2/token" | tee /dev/stderr | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`;
  return `
Tessera created a demo app because the store was empty (DEMO_APP=off skips this).
The ClientSecret is shown only now; keep it on the server side.
  AppID         ${app.appId}
  AppKey        ${app.appKey}
  ClientID      ${app.clientId}
  ClientSecret  ${app.clientSecret}

Try it (paste into bash):

  BASE=${baseUrl}
  # an admin token (ClientID + ClientSecret)
  ADMIN_TOKEN=$(${tokenRequest(app.clientId, app.clientSecret)}; echo
  # an anonymous token (AppID + AppKey)
  ANON_TOKEN=$(${tokenRequest(app.appId, app.appKey)}; echo
  # whoami in the three modes
  curl -s -u '${app.appId}:anything' "$BASE/api/apps/${app.appId}/whoami"; echo
  curl -s -H "Authorization: Bearer $ANON_TOKEN" "$BASE/api/apps/${app.appId}/whoami"; echo
  curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$BASE/api/apps/${app.appId}/whoami"; echo

`;
}
