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
   * The ClientSecret, for the first-run banner alone, which prints it anyway: its commands set
   * `TESSERA_CLIENT_SECRET` first. Everywhere else the code and the commands read it from the
   * environment, where `SET_CLIENT_SECRET_COMMAND` puts it: a secret belongs neither in code nor
   * in a shell's history.
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
    // The AppKey is public, made for web pages.
    appKey: ${js(appKey)},
  });
  const who = document.querySelector('#who');
  try {
    // An anonymous token, then whoami.
    const me = await tessera.whoami();
    who.textContent = \`\${me.principal} (\${me.auth})\`;
  } catch (error) {
    // This page's origin not allowed (CORS):
    // TypeError: Failed to fetch.
    who.textContent = \`\${error.name}: \${error.message}\`;
    console.error(error);
  }
</script>
`;
}

/** Server code with `tessera-tokens/client`: admin tokens of 15 minutes, renewed; whoami and the app. */
export function nodeServer(values: SnippetValues): string {
  return `${adminClientScript('server.mjs', values, [
    '// Admin tokens live 15 minutes and are',
    "// renewed: a leaked one opens the app's",
    '// data, but not for long.',
  ])}
// Who the token is: GET …/whoami.
const me = await tessera.whoami();
console.log(me);
// The app itself, for admins only.
const app = await tessera.json(tessera.appUrl);
console.log(app.name, app.configuration);
`;
}

/**
 * The start of a Node script with `tessera-tokens/client` in admin mode (`file`, with how to run it):
 * tokens of 15 minutes, and `options`, lines of more options with their comments.
 */
function adminClientScript(
  file: string,
  { baseUrl, appId, clientId }: Pick<SnippetValues, 'baseUrl' | 'appId' | 'clientId'>,
  options: string[],
): string {
  return `// ${file} (Node 22 or later): run it
// where TESSERA_CLIENT_SECRET is set.
import { TesseraClient } from 'tessera-tokens/client';

const tessera = new TesseraClient({
  baseUrl: ${js(baseUrl)},
  appId: ${js(appId)},
  mode: 'admin',
  clientId: ${js(clientId)},
  clientSecret: process.env.TESSERA_CLIENT_SECRET,
${options.map((line) => `  ${line}\n`).join('')}  adminTokenLifetimeSeconds: ${ADMIN_TOKEN_LIFETIME_SECONDS},
});
`;
}

/**
 * A credential's admin tokens, as the page that shows its secret gives them: curl, asking for 15
 * minutes as every command here does, and server code with `tessera-tokens/client` (its `scope`
 * narrows a token to some of the credential's scopes).
 */
export function credentialCommands({ baseUrl, appId, clientId }: Pick<SnippetValues, 'baseUrl' | 'appId' | 'clientId'>): string {
  return [
    `APP_URL=${sh(`${baseUrl}/api/apps/${appId}`)}`,
    "# an admin token with the credential's scopes that expires in 15 minutes",
    `EXPIRES_AT=$(( ($(date +%s) + ${ADMIN_TOKEN_LIFETIME_SECONDS}) * 1000 ))`,
    'curl -s "$APP_URL/oauth2/token" \\',
    '  -d grant_type=client_credentials \\',
    `  -d client_id=${sh(clientId)} \\`,
    '  --data-urlencode client_secret="$TESSERA_CLIENT_SECRET" \\',
    '  -d expiresAt="$EXPIRES_AT"; echo',
  ].join('\n');
}

/** Server code with a credential: `TesseraClient` with its `tcl_` ClientID, tokens of 15 minutes renewed, whoami. */
export function credentialNodeScript(
  values: Pick<SnippetValues, 'baseUrl' | 'appId' | 'clientId'> & { scopes: readonly string[] },
): string {
  return `${adminClientScript('job.mjs', values, [
    '// Its scopes, or fewer if this code',
    '// needs fewer.',
    `scope: [${values.scopes.map(js).join(', ')}],`,
  ])}
// Its scopes and ClientID: GET …/whoami.
console.log(await tessera.whoami());
`;
}

/** openid-client v6: the client credentials grant with `expiresAt` (a field of Tessera's own), then whoami. */
export function openidClient({ baseUrl, appId, clientId }: SnippetValues): string {
  const issuer = `${baseUrl}/api/apps/${appId}`;
  const insecure = baseUrl.startsWith('http:') ? `// For http:// only.\nclient.allowInsecureRequests(config);\n` : '';
  return `// oauth.mjs: npm install openid-client,
// and TESSERA_CLIENT_SECRET set.
import * as client from 'openid-client';

const issuer = ${js(issuer)};
const config = new client.Configuration(
  { issuer, token_endpoint: \`\${issuer}/oauth2/token\` },
  ${js(clientId)},
  process.env.TESSERA_CLIENT_SECRET,
);
${insecure}
// expiresAt (UNIX ms) is Tessera's own
// field: an admin token of 15 minutes.
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
 * Commands to paste into bash or zsh, as the first-run banner and the portal give them: an admin
 * token (asked to live 15 minutes) and an anonymous token, form-encoded as RFC 6749 has it, with the
 * seed's `Basic AppID:anything` header, then whoami in the three modes. The ClientSecret is read
 * from `$TESSERA_CLIENT_SECRET`; only the banner, which prints it anyway, sets it on the first line.
 */
export function curlCommands({ baseUrl, appId, appKey, clientId, clientSecret }: SnippetValues): string {
  const basic = `-u ${sh(`${appId}:anything`)}`;
  const tokenRequest = (name: string, fields: string[]) => [
    `${name}=$(curl -s "$APP_URL/oauth2/token" ${basic} \\`,
    ...fields.map((field) => `  ${field} \\`),
    `  | tee /dev/stderr | sed -E 's/.*"access_token":"([^"]+)".*/\\1/'); echo`,
  ];
  return [
    `APP_URL=${sh(`${baseUrl}/api/apps/${appId}`)}`,
    ...(clientSecret === undefined ? [] : [`TESSERA_CLIENT_SECRET=${sh(clientSecret)}`]),
    '# an admin token (ClientID + ClientSecret) that expires in 15 minutes',
    `EXPIRES_AT=$(( ($(date +%s) + ${ADMIN_TOKEN_LIFETIME_SECONDS}) * 1000 ))`,
    ...tokenRequest('ADMIN_TOKEN', [
      '-d grant_type=client_credentials',
      `-d client_id=${sh(clientId)}`,
      '--data-urlencode client_secret="$TESSERA_CLIENT_SECRET"',
      '-d expiresAt="$EXPIRES_AT"',
    ]),
    '# an anonymous token (AppID + AppKey)',
    ...tokenRequest('ANON_TOKEN', ['-d grant_type=client_credentials', `-d client_id=${sh(appId)}`, `-d client_secret=${sh(appKey)}`]),
    '# whoami in the three modes',
    `curl -s "$APP_URL/whoami" ${basic}; echo`,
    'curl -s "$APP_URL/whoami" -H "Authorization: Bearer $ANON_TOKEN"; echo',
    'curl -s "$APP_URL/whoami" -H "Authorization: Bearer $ADMIN_TOKEN"; echo',
  ].join('\n');
}

/**
 * The command that puts the ClientSecret into a terminal's environment for the server code and curl
 * to read, without showing it or keeping it in the shell's history: it is pasted at its prompt.
 * `printf` makes the prompt, which bash's `read -p` and zsh's `read '…?'` would make each its own way.
 */
export const SET_CLIENT_SECRET_COMMAND =
  "printf 'ClientSecret: ' && read -rs TESSERA_CLIENT_SECRET && echo && export TESSERA_CLIENT_SECRET";

/**
 * The deployed JavaScript SDK, pointed at Tessera: a mobile app's own calls (no token: the AppID and
 * AppKey in the SDK's headers, Basic anonymous access), then server code's admin token; whoami with each.
 */
export function kiiSdk({ baseUrl, appId, appKey, clientId }: SnippetValues): string {
  return `// sdk.mjs: npm install kii-cloud-sdk,
// and TESSERA_CLIENT_SECRET set.
import kii from 'kii-cloud-sdk';

const { Kii } = kii.create();
Kii.initializeWithSite(${js(appId)}, ${js(appKey)}, ${js(`${baseUrl}/api`)});
const whoami = ${js(`${baseUrl}/api/apps/${appId}/whoami`)};

// A mobile app's own calls carry no token:
// the SDK sends the AppID and AppKey.
const app = await fetch(whoami, {
  headers: { 'x-kii-appid': ${js(appId)}, 'x-kii-appkey': ${js(appKey)} },
});
console.log('mobile app:', await app.json());

// Server code: an admin token.
const admin = await Kii.authenticateAsAppAdmin(
  ${js(clientId)},
  process.env.TESSERA_CLIENT_SECRET,
);
const me = await fetch(whoami, {
  headers: { authorization: \`Bearer \${admin.getAccessToken()}\` },
});
console.log('server code:', await me.json());
`;
}
