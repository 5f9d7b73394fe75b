import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import { ATTESTATION_PROVIDERS, type AttestationProvider } from 'tessera-tokens/internal/principal.js';
import { POW_ALGORITHMS } from 'tessera-tokens/internal/apps/app.js';
import type { CreatedDebugToken, DebugTokenDescription } from '../../../attestation/debug-tokens.js';
import { refusedShare, type AttestationPeriod, type AttestationSummary } from '../../../attestation/monitor.js';
import type { AppPermissions } from '../../../developers/roles.js';
import { html, type Html } from '../../html.js';
import { alert, csrfField, onceField, page, type PageFrame } from '../../layout.js';
import { appHeader } from '../common/app-header.js';
import { formOfConfiguration, type AttestationForm } from './form.js';

// The attestation page's view: a pure function of the app, its counts by attestation outcome, its
// debug tokens, what the developer may do, and the state its forms left.

export type Section = 'settings' | 'debug-tokens' | 'apple' | 'android';
export type CountsPer = 'hour' | 'day';

export interface AttestationPageInput {
  app: AppDescription;
  permissions: AppPermissions;
  summary: AttestationSummary;
  per: CountsPer;
  debugTokens: readonly DebugTokenDescription[];
  /** What the app's platform attestations are checked against, in words; null: not set up. */
  platforms: { android: string | null; apple: string | null };
  /** The platforms' forms as typed (after a mistake), or as set. */
  platformForms?: PlatformForms;
  once: string;
  form?: AttestationForm;
  mistake?: { section: Section; message: string };
  done?: string | undefined;
  created?: CreatedDebugToken;
}

/** The platforms' forms: App Attest's ids, and Play Integrity's package (its keys are never shown back). */
export interface PlatformForms {
  teamId: string;
  bundleId: string;
  environment: string;
  packageName: string;
}

const DONE: Record<string, string> = {
  'apple-saved': 'App Attest is set up: apple attestations are checked against these ids from now on.',
  'android-saved': 'Play Integrity is set up: android attestations are decrypted and verified with these keys from now on.',
  saved: 'The attestation settings are saved. Every instance of the service applies them within a second.',
  revoked: 'The debug token is revoked: it attests nothing from now on.',
};

export function doneMessage(done: unknown): string | undefined {
  return typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined;
}

const MODE_WORDS = {
  off: 'Off: anonymous tokens are given as always, and nothing is checked or counted.',
  monitor: 'Monitor: anonymous tokens are given as always, and each request is counted by what its attestation was (below).',
  enforce: 'Enforce: an anonymous token request without a valid attestation is refused (401).',
} as const;

export function attestationPage(frame: PageFrame, input: AttestationPageInput): Html {
  const { app, permissions, summary, per, debugTokens, once, mistake, created } = input;
  const { csrfToken } = frame;
  const form = input.form ?? formOfConfiguration(app.configuration);
  const platformForms = input.platformForms ?? { teamId: '', bundleId: '', environment: 'production', packageName: '' };
  const base = `/portal/apps/${app.appId}/attestation`;
  const mayChange = permissions.may.change_configuration;
  const mistakeOf = (section: Section) => alert(mistake?.section === section ? mistake.message : undefined);
  const share = refusedShare(summary.total);
  return page({
    title: `Attestation of ${app.name}`,
    ...frame,
    body: html`${appHeader(app.appId, app.name, 'Attestation', permissions)}
${input.done === undefined ? null : html`<p class="notice success" role="status">${input.done}</p>`}
${
  created === undefined
    ? null
    : html`<div class="notice invitation" role="status">
  <p>Debug token <strong>${created.name}</strong>. Copy it now: it is shown only this once. Where the app runs in CI or an emulator, send it with anonymous token requests as <code>X-Tessera-Attestation: debug.&lt;token&gt;</code>.</p>
  <p class="link-box"><code data-copyable data-debug-token>${created.token}</code></p>
</div>`
}
<section class="app-form" aria-labelledby="standing">
<h2 id="standing">Where the app stands</h2>
<p data-attestation-mode="${app.configuration.anonymousAttestation}">${MODE_WORDS[app.configuration.anonymousAttestation]}</p>
<p data-basic-anonymous="${app.configuration.basicAnonymous ? 'accepted' : 'refused'}">${
      app.configuration.basicAnonymous
        ? html`Basic anonymous access (calls with no token, <code>Authorization: Basic base64(AppID:anything)</code>) is <strong>accepted</strong>. It is outside attestation: a one-time proof cannot go with every call, so anyone who knows the AppID can call as an anonymous user. Turn it off below once the app's clients use anonymous tokens.`
        : html`Basic anonymous access (calls with no token) is <strong>refused</strong> (401): every anonymous call needs an anonymous token, which attestation covers.`
    }</p>
<p data-platforms>Platforms: App Attest ${
      input.platforms.apple === null ? html`<strong>not set up</strong>` : html`for <code>${input.platforms.apple}</code>`
    }; Play Integrity ${
      input.platforms.android === null ? html`<strong>not set up</strong>` : html`for <code>${input.platforms.android}</code>`
    }. Set them below, with the app's admin API (<code>PUT /api/apps/${app.appId}/attestation/apple</code>, <code>…/android</code>) or with the operator's <code>tessera attestation apple set</code> and <code>android set</code>.</p>
</section>
<section class="outcomes-section" aria-labelledby="outcomes">
<h2 id="outcomes">Anonymous token requests by attestation</h2>
<p>Per ${per} (UTC), the last ${per === 'hour' ? '24 hours' : '14 days'}. <a href="${base}?per=${per === 'hour' ? 'day' : 'hour'}">Per ${per === 'hour' ? 'day, the last 14 days' : 'hour, the last 24 hours'}</a>.</p>
<p data-refused-share>${
      share === null
        ? 'No request was classified in this span: turn on monitor to see what enforcement would refuse before turning it on.'
        : html`Of the requests classified in this span, <strong>${percent(share)}</strong> had no valid attestation: ${
            app.configuration.anonymousAttestation === 'enforce' ? 'enforcement refuses those.' : 'enforcement would refuse those.'
          }`
    } Apps on the deployed SDKs send none: they count as missing.</p>
${outcomeTable(summary, per)}
</section>
${
  mayChange
    ? html`<section class="app-form" aria-labelledby="attestation-settings">
<h2 id="attestation-settings">Settings</h2>
${mistakeOf('settings')}
<form method="post" action="${base}" class="stack">
  ${csrfField(csrfToken)}
  <fieldset>
    <legend>Attestation of anonymous token requests</legend>
    ${(['off', 'monitor', 'enforce'] as const).map(
      (mode) => html`<div class="choice">
      <input type="radio" id="mode-${mode}" name="anonymousAttestation" value="${mode}"${form.mode === mode ? html` checked` : null}>
      <label for="mode-${mode}">${MODE_WORDS[mode]}</label>
    </div>`,
    )}
  </fieldset>
  <div class="choice">
    <input type="checkbox" id="basic-anonymous" name="basicAnonymous" value="yes"${form.basicAnonymous ? html` checked` : null} aria-describedby="basic-anonymous-hint">
    <label for="basic-anonymous">Accept Basic anonymous access (no token)</label>
  </div>
  <p class="hint" id="basic-anonymous-hint">Unticked, a call with <code>Authorization: Basic</code> and no token is refused; apps on the deployed SDKs that call that way stop working.</p>
  <label for="pow-algorithm">Proof of work: algorithm</label>
  <select id="pow-algorithm" name="powAlgorithm">
    ${POW_ALGORITHMS.map((algorithm) => html`<option value="${algorithm}"${form.powAlgorithm === algorithm ? html` selected` : null}>${algorithm}</option>`)}
  </select>
  <label for="pow-cost">Proof of work: cost of one attempt</label>
  <input type="text" id="pow-cost" name="powCost" inputmode="numeric" pattern="[0-9]*" maxlength="9" value="${form.powCost}" aria-describedby="pow-cost-hint">
  <p class="hint" id="pow-cost-hint">Rounds of the hash, or PBKDF2's iterations: 1 to 10,000.</p>
  <label for="pow-attempts">Proof of work: the most attempts a challenge needs</label>
  <input type="text" id="pow-attempts" name="powMaxAttempts" inputmode="numeric" pattern="[0-9]*" maxlength="9" value="${form.powMaxAttempts}" aria-describedby="pow-attempts-hint">
  <p class="hint" id="pow-attempts-hint">Each challenge needs from half of this to all of it: 100 to 10,000,000. At 50,000 with SHA-256, a phone solves one in well under a second.</p>
  <label for="pow-rises">Proof of work: rises from this many requests a minute</label>
  <input type="text" id="pow-rises" name="powRisesAbovePerMinute" inputmode="numeric" pattern="[0-9]*" maxlength="9" value="${form.powRisesAbovePerMinute}" aria-describedby="pow-rises-hint">
  <p class="hint" id="pow-rises-hint">From this rate of anonymous token requests, challenges need twice the attempts, and twice again at each doubling of the rate (up to 64 times). Empty: never.</p>
  <div class="buttons"><button type="submit">Save attestation settings</button></div>
</form>
</section>`
    : null
}
${
  mayChange
    ? html`<section class="app-form" aria-labelledby="platforms">
<h2 id="platforms">Platforms</h2>
<p>What the app's App Attest keys (iOS) and Play Integrity tokens (Android) are checked against, here, with nothing asked of Apple or Google at each request.</p>
${mistakeOf('apple')}
<form method="post" action="${base}/apple" class="stack">
  ${csrfField(csrfToken)}
  <fieldset>
    <legend>App Attest</legend>
    <label for="team-id">Team ID</label>
    <input type="text" id="team-id" name="teamId" required maxlength="10" autocomplete="off" spellcheck="false" autocapitalize="characters" value="${platformForms.teamId}" aria-describedby="team-id-hint">
    <p class="hint" id="team-id-hint">The 10 characters of the Apple Developer account, such as <code>ABCDE12345</code>.</p>
    <label for="bundle-id">Bundle identifier</label>
    <input type="text" id="bundle-id" name="bundleId" required maxlength="255" autocomplete="off" spellcheck="false" autocapitalize="off" value="${platformForms.bundleId}">
    <label for="environment">Environment of its builds</label>
    <select id="environment" name="environment">
      ${(['production', 'development'] as const).map((environment) => html`<option value="${environment}"${platformForms.environment === environment ? html` selected` : null}>${environment === 'production' ? 'Production (App Store, TestFlight)' : 'Development (run from Xcode)'}</option>`)}
    </select>
  </fieldset>
  <div class="buttons"><button type="submit">Save App Attest</button></div>
</form>
${mistakeOf('android')}
<form method="post" action="${base}/android" class="stack">
  ${csrfField(csrfToken)}
  <fieldset>
    <legend>Play Integrity</legend>
    <label for="package-name">Package name</label>
    <input type="text" id="package-name" name="packageName" required maxlength="255" autocomplete="off" spellcheck="false" autocapitalize="off" value="${platformForms.packageName}">
    <label for="decryption-key">Decryption key</label>
    <textarea id="decryption-key" name="decryptionKey" rows="2" required maxlength="200" autocomplete="off" spellcheck="false" autocapitalize="off" aria-describedby="play-keys-hint"></textarea>
    <label for="verification-key">Verification key</label>
    <textarea id="verification-key" name="verificationKey" rows="3" required maxlength="1000" autocomplete="off" spellcheck="false" autocapitalize="off" aria-describedby="play-keys-hint"></textarea>
    <p class="hint" id="play-keys-hint">Both from the Play Console (App integrity, "Decrypt and verify on your server"), as it shows them (base64). They are never shown again here: only their fingerprints, to the API.</p>
  </fieldset>
  <div class="buttons"><button type="submit">Save Play Integrity</button></div>
</form>
</section>`
    : null
}
<section class="app-form" aria-labelledby="debug-tokens">
<h2 id="debug-tokens">Debug tokens</h2>
<p>For CI and emulators, where no platform can attest: a debug token attests the requests that carry it, again and again, until it is revoked. Keep it out of the app itself.</p>
${mistakeOf('debug-tokens')}
${
  debugTokens.length === 0
    ? html`<p>This app has no debug tokens.</p>`
    : html`<table class="people">
  <caption>The app's debug tokens</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Made</th><th scope="col">Last used</th>${mayChange ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : null}</tr></thead>
  <tbody>
  ${debugTokens.map(
    (token) => html`<tr>
    <td data-label="Name">${token.name}</td>
    <td data-label="Made">${token.createdAt.slice(0, 10)}</td>
    <td data-label="Last used">${token.lastUsedAt === null ? 'never' : token.lastUsedAt.slice(0, 16).replace('T', ' ')}</td>
    ${
      mayChange
        ? html`<td><form method="post" action="${base}/debug-tokens/${token.id}/revoke" class="inline">
      ${csrfField(csrfToken)}
      <button type="submit" class="link danger" aria-label="Revoke ${token.name}">Revoke</button>
    </form></td>`
        : null
    }
  </tr>`,
  )}
  </tbody>
</table>`
}
${
  mayChange
    ? html`<form method="post" action="${base}/debug-tokens" class="stack">
  ${csrfField(csrfToken)}
  ${onceField(once)}
  <label for="debug-token-name">Name of a new debug token</label>
  <input type="text" id="debug-token-name" name="name" required maxlength="100" autocomplete="off" placeholder="CI, Android emulator">
  <div class="buttons"><button type="submit">Make a debug token</button></div>
</form>`
    : null
}
</section>`,
  });
}

function percent(share: number): string {
  return `${(Math.round(share * 1000) / 10).toString()} %`;
}

type Column = [string, (period: Omit<AttestationPeriod, 'start'>) => number | string];

const PROVIDER_NAMES: Record<AttestationProvider, string> = {
  pow: 'Proof of work',
  apple: 'App Attest',
  android: 'Play Integrity',
  debug: 'Debug token',
};

/**
 * The table's columns: each provider that verified a request in the span (a proof of work at
 * least), the three ways to fail, what `enforce` refused, the requests made while it was off if
 * any, and the share without a valid attestation. Fewer columns than outcomes: a laptop's width.
 */
function columnsOf(total: Omit<AttestationPeriod, 'start'>): Column[] {
  const providers = ATTESTATION_PROVIDERS.filter((provider) => provider === 'pow' || total.verified[provider] > 0);
  return [
    ...providers.map((provider): Column => [PROVIDER_NAMES[provider], (period) => period.verified[provider]]),
    ['Missing', (period) => period.missing],
    ['Invalid', (period) => period.invalid],
    ['Replayed', (period) => period.replayed],
    ['Refused', (period) => period.refused],
    ...(total.unclassified > 0 ? [['Not classified', (period) => period.unclassified] as Column] : []),
    [
      'No valid one',
      (period) => {
        const share = refusedShare(period);
        return share === null ? '–' : percent(share);
      },
    ],
  ];
}

function outcomeTable(summary: AttestationSummary, per: CountsPer): Html {
  const columns = columnsOf(summary.total);
  const row = (label: Html | string, period: Omit<AttestationPeriod, 'start'>) =>
    html`<tr><th scope="row">${label}</th>${columns.map(([name, value]) => html`<td data-label="${name}">${String(value(period))}</td>`)}</tr>`;
  return html`<div class="table-frame" tabindex="0" role="region" aria-label="Anonymous token requests by attestation, scrolls sideways"><table class="people outcomes" data-attestation-outcomes>
  <caption>Anonymous token requests per ${per}, by attestation (verified by provider; missing, invalid or replayed)</caption>
  <thead><tr><th scope="col">${per === 'hour' ? 'Hour' : 'Day'}</th>${columns.map(([name]) => html`<th scope="col">${name}</th>`)}</tr></thead>
  <tbody>
  ${[...summary.periods].reverse().map((period) => row(per === 'hour' ? period.start.slice(0, 13).replace('T', ' ') + ':00' : period.start.slice(0, 10), period))}
  ${row(html`<strong>In all</strong>`, summary.total)}
  </tbody>
</table></div>`;
}
