/**
 * The quickstarts' code (the portal shows it on the new-app page and each app's overview; the
 * first-run banner prints the curl lines): complete programs with an app's own values filled in,
 * which run as they are.
 * tests/http/portal-quickstarts.test.ts takes each one out of the page and runs it against the
 * server (node, bash and curl); tests/browser/portal-quickstarts.test.ts opens the web page in
 * Chromium.
 */

/** What the code is filled in with. */
export interface SnippetValues {
  /** Where the service is: `PUBLIC_URL`, or the address the browser used (`serviceBaseUrl`). */
  baseUrl: string;
  appId: string;
  appKey: string;
  clientId: string;
  /**
   * The ClientSecret, on the page that shows it once (the new app); undefined elsewhere, where
   * the commands read it from `$TESSERA_CLIENT_SECRET`. The programs always read it from the
   * environment: a secret does not belong in code.
   */
  clientSecret?: string | undefined;
}

/** How long the admin tokens the snippets ask for live: 15 minutes. */
export const ADMIN_TOKEN_LIFETIME_SECONDS = 900;

export const SNIPPET_NAMES = ['web', 'node', 'openid-client', 'curl', 'kii-cloud-sdk'] as const;
export type SnippetName = (typeof SNIPPET_NAMES)[number];

/** Every snippet, by name. */
export function snippets(values: SnippetValues): Record<SnippetName, string> {
  return {
    web: webPage(values),
    node: nodeServer(values),
    'openid-client': openidClient(values),
    curl: curlCommands(values),
    'kii-cloud-sdk': kiiSdk(values),
  };
}

/** A JavaScript string literal of `text`, in single quotes. */
function js(text: string): string {
  return `'${text.replace(/[\\']/g, (character) => `\\${character}`).replace(/\n/g, '\\n')}'`;
}

/** A word for bash: as it is when it has nothing bash reads specially, else in single quotes. */
function sh(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A minimal web page: `tessera-tokens/client` from the server, an anonymous token, whoami. */
export function webPage({ baseUrl, appId, appKey }: SnippetValues): string {
  return `<!doctype html>
<meta charset="utf-8">
<title>Who am I</title>
<p id="who">…</p>
<script type="module">
  import { TesseraClient } from ${js(`${baseUrl}/tessera-client.js`)};

  const tessera = new TesseraClient({
    baseUrl: ${js(baseUrl)},
    appId: ${js(appId)},
    mode: 'anonymous',
    appKey: ${js(appKey)}, // public: made to be in web pages
  });
  const who = document.querySelector('#who');
  try {
    const me = await tessera.whoami(); // an anonymous token, then GET …/whoami
    who.textContent = \`\${me.principal} (\${me.auth})\`;
  } catch (error) {
    // This page's origin not allowed: TypeError: Failed to fetch (CORS)
    who.textContent = \`\${error.name}: \${error.message}\`;
    console.error(error);
  }
</script>
`;
}

/** Server code with `tessera-tokens/client`: admin tokens of 15 minutes, renewed; whoami and the app. */
export function nodeServer({ baseUrl, appId, clientId }: SnippetValues): string {
  return `// server.mjs (Node 22 or later): TESSERA_CLIENT_SECRET=… node server.mjs
import { TesseraClient } from 'tessera-tokens/client';

const tessera = new TesseraClient({
  baseUrl: ${js(baseUrl)},
  appId: ${js(appId)},
  mode: 'admin',
  clientId: ${js(clientId)},
  clientSecret: process.env.TESSERA_CLIENT_SECRET,
  // Each admin token lives 15 minutes and is renewed before it ends:
  // a leaked one opens all of the app's data, but not for long.
  adminTokenLifetimeSeconds: ${ADMIN_TOKEN_LIFETIME_SECONDS},
});

const me = await tessera.whoami(); // GET /api/apps/${appId}/whoami
console.log(me);
const app = await tessera.json(tessera.appUrl); // GET /api/apps/${appId}: admins only
console.log(app.name, app.configuration);
`;
}

/** openid-client v6: the client credentials grant with `expiresAt` (a field of Tessera's own), then whoami. */
export function openidClient({ baseUrl, appId, clientId }: SnippetValues): string {
  const issuer = `${baseUrl}/api/apps/${appId}`;
  const insecure = baseUrl.startsWith('http:') ? `client.allowInsecureRequests(config); // for http:// only\n` : '';
  return `// oauth.mjs: npm install openid-client; TESSERA_CLIENT_SECRET=… node oauth.mjs
import * as client from 'openid-client';

const issuer = ${js(issuer)};
const config = new client.Configuration(
  { issuer, token_endpoint: \`\${issuer}/oauth2/token\` },
  ${js(clientId)},
  process.env.TESSERA_CLIENT_SECRET,
);
${insecure}
// expiresAt (UNIX ms) is Tessera's own field: an admin token of 15 minutes.
const tokens = await client.clientCredentialsGrant(config, {
  expiresAt: String(Date.now() + ${ADMIN_TOKEN_LIFETIME_SECONDS}_000),
});
const me = await fetch(\`\${issuer}/whoami\`, {
  headers: { authorization: \`Bearer \${tokens.access_token}\` },
});
console.log(tokens.expires_in, await me.json());
`;
}

/**
 * Commands to paste into bash, as the first-run banner and the new-app page give them: an admin
 * token (asked to live 15 minutes) and an anonymous token, with the seed's `Basic AppID:anything`
 * header, then whoami in the three modes. Without the ClientSecret, the admin token request reads
 * it from `$TESSERA_CLIENT_SECRET`.
 */
export function curlCommands({ baseUrl, appId, appKey, clientId, clientSecret }: SnippetValues): string {
  const tokenRequest = (fields: string) =>
    `curl -s -u '${appId}:anything' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"grant_type":"client_credentials",${fields}}' \\\n` +
    `    "$BASE/api/apps/${appId}/oauth2/token" | tee /dev/stderr | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`;
  const secret = clientSecret ?? `'"$TESSERA_CLIENT_SECRET"'`;
  return [
    `BASE=${sh(baseUrl)}`,
    ...(clientSecret === undefined ? ['# TESSERA_CLIENT_SECRET: the ClientSecret, from your configuration'] : []),
    '# an admin token (ClientID + ClientSecret) that expires in 15 minutes',
    `EXPIRES_AT=$(( ($(date +%s) + ${ADMIN_TOKEN_LIFETIME_SECONDS}) * 1000 ))`,
    `ADMIN_TOKEN=$(${tokenRequest(`"client_id":"${clientId}","client_secret":"${secret}","expiresAt":'"$EXPIRES_AT"'`)}; echo`,
    '# an anonymous token (AppID + AppKey)',
    `ANON_TOKEN=$(${tokenRequest(`"client_id":"${appId}","client_secret":"${appKey}"`)}; echo`,
    '# whoami in the three modes',
    `curl -s -u '${appId}:anything' "$BASE/api/apps/${appId}/whoami"; echo`,
    `curl -s -H "Authorization: Bearer $ANON_TOKEN" "$BASE/api/apps/${appId}/whoami"; echo`,
    `curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$BASE/api/apps/${appId}/whoami"; echo`,
  ].join('\n');
}

/** The deployed JavaScript SDK, pointed at Tessera: an admin token, then whoami with it. */
export function kiiSdk({ baseUrl, appId, appKey, clientId }: SnippetValues): string {
  return `// sdk.mjs: npm install kii-cloud-sdk; TESSERA_CLIENT_SECRET=… node sdk.mjs
import kii from 'kii-cloud-sdk';

const { Kii } = kii.create();
Kii.initializeWithSite(${js(appId)}, ${js(appKey)}, ${js(`${baseUrl}/api`)});
const admin = await Kii.authenticateAsAppAdmin(
  ${js(clientId)},
  process.env.TESSERA_CLIENT_SECRET,
);
const me = await fetch(${js(`${baseUrl}/api/apps/${appId}/whoami`)}, {
  headers: { authorization: \`Bearer \${admin.getAccessToken()}\` },
});
console.log(await me.json());
`;
}
