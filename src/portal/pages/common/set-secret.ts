import { codeText } from './code-text.js';
import { SET_CLIENT_SECRET_COMMAND } from '../../../apps/snippets.js';
import { html, type Html } from '../../html.js';

/**
 * The command that puts a ClientSecret into a terminal's environment (`TESSERA_CLIENT_SECRET`), for
 * the commands and code after it, with what to paste: pasted at its prompt, the secret is neither
 * shown nor kept in the shell's history. A block of its own, since a `read` pasted with other
 * commands would read the next of them as the secret.
 */
export function setSecretStep(whichSecret: string): Html {
  return html`<div class="set-secret">
  <p id="set-secret-hint">First run this in your terminal (bash or zsh); at its <samp>ClientSecret:</samp> prompt, paste ${whichSecret} and press Enter. It is not shown, and stays out of the shell's history; the commands and programs you run in that terminal then read it.</p>
  <pre class="commands" data-snippet="set-secret" data-copyable="the command that sets the ClientSecret" aria-describedby="set-secret-hint"><code>${codeText(SET_CLIENT_SECRET_COMMAND)}</code></pre>
</div>`;
}
