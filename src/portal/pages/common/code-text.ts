import { escapeHtml, Html } from '../../html.js';

/** A word with a hyphen in it (`tessera-tokens/client`, `--pack-destination`). */
const HYPHENATED = /\S*-\S*/g;
/** Longer than this, a word may still break where it must: it would not fit a phone's line whole. */
const KEPT_WHOLE_MAX = 32;

/**
 * The text of a code block (`pre.commands`, which wraps its lines on a narrow screen): a word with
 * a hyphen is kept whole (`.whole`), so that a line breaks at a space before it rather than after
 * its hyphen, where a browser may break too (`tessera-⏎tokens/client`). What is copied is the
 * text alone.
 */
export function codeText(text: string): Html {
  let out = '';
  let last = 0;
  for (const match of text.matchAll(HYPHENATED)) {
    const word = match[0];
    out += escapeHtml(text.slice(last, match.index));
    out += word.length <= KEPT_WHOLE_MAX ? `<span class="whole">${escapeHtml(word)}</span>` : escapeHtml(word);
    last = match.index + word.length;
  }
  return new Html(out + escapeHtml(text.slice(last)));
}
