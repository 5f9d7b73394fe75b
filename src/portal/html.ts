/**
 * HTML built from template literals: every value put in is escaped, unless it is `Html` already.
 * A template engine would add a dependency and a second language for what these few lines do; the
 * escaping is the one thing that must never be forgotten, and here it cannot be.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character]!);
}

/** What a template takes: text, numbers, `Html` and lists of them; any other object would show as `[object Object]`. */
type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

/** A value in a template: `Html` as it is, a list one after the other, nothing for null, undefined and false. */
function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let text = strings[0]!;
  for (let index = 0; index < values.length; index++) text += render(values[index]) + strings[index + 1]!;
  return new Html(text);
}
