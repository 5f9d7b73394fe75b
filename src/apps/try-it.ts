import type { AppKeys } from './keys.js';

/**
 * Commands to paste into bash that get an admin and an anonymous token with an app's keys and call
 * whoami in the three modes: the first-run banner and the portal's new-app page show them.
 */
export function tryItCommands(app: Pick<AppKeys, 'appId' | 'appKey' | 'clientId' | 'clientSecret'>, baseUrl: string): string {
  const tokenRequest = (clientId: string, clientSecret: string) =>
    `curl -s -u '${app.appId}:anything' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"grant_type":"client_credentials","client_id":"${clientId}","client_secret":"${clientSecret}"}' \\\n` +
    `    "$BASE/api/apps/${app.appId}/oauth2/token" | tee /dev/stderr | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`;
  return [
    `BASE=${baseUrl}`,
    '# an admin token (ClientID + ClientSecret)',
    `ADMIN_TOKEN=$(${tokenRequest(app.clientId, app.clientSecret)}; echo`,
    '# an anonymous token (AppID + AppKey)',
    `ANON_TOKEN=$(${tokenRequest(app.appId, app.appKey)}; echo`,
    '# whoami in the three modes',
    `curl -s -u '${app.appId}:anything' "$BASE/api/apps/${app.appId}/whoami"; echo`,
    `curl -s -H "Authorization: Bearer $ANON_TOKEN" "$BASE/api/apps/${app.appId}/whoami"; echo`,
    `curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$BASE/api/apps/${app.appId}/whoami"; echo`,
  ].join('\n');
}
