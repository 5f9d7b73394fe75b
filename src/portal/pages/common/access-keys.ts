import { html, type Html } from '../../html.js';

/**
 * One key of an app: its name, its value in an element whose `data-key` says which key it is (the
 * page's script adds a copy button beside it), and what it is for.
 */
export function keyRow(label: string, key: 'appId' | 'appKey' | 'clientId' | 'clientSecret', value: string, hint: string): Html {
  return html`<div class="key">
    <dt>${label}</dt>
    <dd><code data-key="${key}">${value}</code><span class="hint">${hint}</span></dd>
  </div>`;
}
