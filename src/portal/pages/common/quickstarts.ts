import { codeText } from './code-text.js';
import { MAX_ORIGIN_LENGTH } from 'tessera-tokens/internal/apps/origins.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField } from '../../layout.js';
import { ADMIN_TOKEN_LIFETIME_SECONDS, snippets, type SnippetValues } from '../../../apps/snippets.js';
import { packageVersion } from '../../../package-root.js';
import { setSecretStep } from './set-secret.js';

/** What the add-origin form says after it was sent: a change made, or a mistake with what was typed. */
export interface OriginFormState {
  done?: string | undefined;
  mistake?: { message: string; typed: string } | undefined;
}

export interface QuickstartsInput {
  /** Never the ClientSecret: the code reads it from the environment (`SET_CLIENT_SECRET_COMMAND`). */
  values: Omit<SnippetValues, 'clientSecret'>;
  /** The app's allowed origins now. */
  allowedOrigins: readonly string[];
  csrfToken: string;
  origin?: OriginFormState;
  /**
   * The new-app page, the only one that shows the ClientSecret: without JavaScript, the add-origin
   * form's answer opens in a new tab, so that this page stays.
   */
  keepThisPage?: boolean;
}

/**
 * "Quickstarts": code to copy, with the app's own values, for each way to use the service (a web
 * page, Node server code, a standard OAuth 2.0 library, curl, the deployed SDK), and beside the web
 * page, the app's allowed origins and a form to add the page's origin. One `<details>` each, the web
 * page open: it works without JavaScript, and a phone shows the list whole.
 */
export function quickstarts({ values, allowedOrigins, csrfToken, origin = {}, keepThisPage = false }: QuickstartsInput): Html {
  const code = snippets(values);
  const { appId } = values;
  const version = packageVersion();
  const run = (file: string) => html`<code class="run">node ${file}</code>`;
  return html`<section class="quickstarts" aria-labelledby="quickstarts">
<h2 id="quickstarts">Quickstarts</h2>
<p class="hint">Code that runs as it is, with this app's keys filled in and the service at <code>${values.baseUrl}</code>. Server code and curl read the ClientSecret from the environment (<code>TESSERA_CLIENT_SECRET</code>), never from the code or a command line, and ask for admin tokens with 15 minutes to live (<code>expiresAt</code>): a leaked admin token opens all of the app's data, a short-lived one not for long.</p>
${setSecretStep(`the ClientSecret (${keepThisPage ? 'shown above' : 'from your configuration'})`)}
<details class="quickstart" id="quickstart-web" open>
  <summary>A web page, with <code>tessera-tokens/client</code></summary>
  <p>Save it as <code>index.html</code> and serve it from your site or dev server (not as a <code>file:</code>). It gets an anonymous token with the AppID and AppKey and shows who it is: <samp>anonymous (bearer)</samp>. No ClientSecret: a web page never has it.</p>
  ${snippet('web', 'the web page', code.web)}
  ${originsForm(appId, allowedOrigins, csrfToken, origin, keepThisPage)}
</details>
<details class="quickstart" id="quickstart-node">
  <summary>Node server code, with <code>tessera-tokens/client</code></summary>
  <p>Install the package <code>tessera-tokens</code>. Until it is published, from its tarball: <code>npm pack --workspace tessera-tokens --pack-destination /tmp</code> in Tessera's checkout, then <code>npm install /tmp/tessera-tokens-${version}.tgz</code> in your project. Once published: <code>npm install tessera-tokens</code>. Save the code as <code>server.mjs</code> and run ${run('server.mjs')}. The client gets an admin token, keeps it, and renews it before its ${ADMIN_TOKEN_LIFETIME_SECONDS / 60} minutes end.</p>
  ${snippet('node', 'the Node code', code.node)}
</details>
<details class="quickstart" id="quickstart-openid-client">
  <summary>A standard OAuth 2.0 library: openid-client</summary>
  <p>Each app is an OAuth 2.0 authorization server; its token endpoint takes the client credentials grant. openid-client sends <code>expiresAt</code> as one more field of the request. <code>npm install openid-client</code>, save the code as <code>oauth.mjs</code> and run ${run('oauth.mjs')}.</p>
  ${snippet('openid-client', 'the openid-client code', code['openid-client'])}
</details>
<details class="quickstart" id="quickstart-curl">
  <summary>curl</summary>
  <p>Paste into the terminal (bash or zsh) where you set the ClientSecret: an admin token, an anonymous token, and who each one is.</p>
  ${snippet('curl', 'the curl commands', code.curl)}
</details>
<details class="quickstart" id="quickstart-kii-cloud-sdk">
  <summary>The deployed SDK: kii-cloud-sdk</summary>
  <p>A mobile app's own calls carry no token: the SDK sends the AppID and AppKey (<code>X-Kii-AppID</code>, <code>X-Kii-AppKey</code>), which Tessera takes as Basic anonymous access on every path. Server code's <code>Kii.authenticateAsAppAdmin</code> works unchanged, with the site at <code>${values.baseUrl}/api</code>. <code>npm install kii-cloud-sdk</code>, save the code as <code>sdk.mjs</code> and run ${run('sdk.mjs')}. The SDK asks for no expiry: its admin tokens never expire unless the app limits their lifetime (<a href="/portal/apps/${appId}/settings">Settings</a>).</p>
  ${snippet('kii-cloud-sdk', 'the SDK code', code['kii-cloud-sdk'])}
</details>
</section>`;
}

function snippet(name: string, label: string, text: string): Html {
  return html`<pre class="commands" data-snippet="${name}" data-copyable="${label}"><code>${codeText(text)}</code></pre>`;
}

/** The app's allowed origins, what a refusal looks like, and a form to add one. */
function originsForm(appId: string, allowed: readonly string[], csrfToken: string, state: OriginFormState, keepThisPage: boolean): Html {
  const invalid = state.mistake !== undefined;
  return html`<div class="origins" id="web-page-origins">
  <p>The page's origin must be one of the app's allowed origins. From any other, the browser refuses the service's answers: <code>whoami</code> fails with <samp>TypeError: Failed to fetch</samp>, and the console says the request was <samp>blocked by CORS policy</samp>. Add the origin here, and reload the page.</p>
  <p class="origins-now">Origins allowed now: ${
    allowed.length === 0
      ? html`<span data-allowed-origins>none</span>`
      : html`<span data-allowed-origins>${allowed.map((origin, index) => html`${index === 0 ? null : ', '}<code>${origin}</code>`)}</span>`
  }</p>
  <div role="status" data-origin-status>${state.done === undefined ? null : html`<p class="notice success">${state.done}</p>`}</div>
  <div data-origin-alert>${alert(state.mistake?.message)}</div>
  <form method="post" action="/portal/apps/${appId}/allowed-origins" class="add-origin" data-add-origin${keepThisPage ? html` target="_blank"` : null}>
    ${csrfField(csrfToken)}
    <label for="page-origin">Your page's origin</label>
    <div class="field-row">
      <input type="text" id="page-origin" name="origin" inputmode="url" maxlength="${MAX_ORIGIN_LENGTH}" autocomplete="off" spellcheck="false" autocapitalize="off" placeholder="http://localhost:5173" value="${state.mistake?.typed ?? ''}" aria-describedby="page-origin-hint"${invalid ? html` aria-invalid="true"` : null}>
      <button type="submit">Allow this origin</button>
    </div>
    <p class="hint" id="page-origin-hint"><code>scheme://host:port</code>, as the address bar shows it, without a path. The app's other origins stay.${keepThisPage ? ' The answer shows below; without JavaScript it opens in a new tab, so that this page and its ClientSecret stay.' : ''}</p>
  </form>
</div>`;
}
