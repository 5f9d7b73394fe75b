/**
 * Text that came from outside (a client's request, an operator's argument, a name stored before names
 * were checked) shown to a person, in an error message or on a terminal.
 */

/**
 * What can move the cursor, recolour or clear a terminal, start a new line, or reorder what a reader
 * sees: control characters (Unicode category Cc: C0, DEL, C1), the line and paragraph separators,
 * and the bidirectional overrides and isolates.
 */
const CONTROL_CHARACTER = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER.source, 'gu');

/** How many characters of a value an error message repeats. */
export const MAX_ECHOED_LENGTH = 64;

export function hasControlCharacters(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/** Each control character as `\uXXXX`, so that it is seen rather than obeyed. */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A value of the caller's for an error message: in double quotes, its control characters and `%`
 * escaped, and at most `MAX_ECHOED_LENGTH` characters long as shown (a longer one is cut and ends
 * with `…`). `%` because deployed SDKs run `decodeURIComponent` over error bodies, so `errorBody`
 * spells each one out as " percent": escaped, the value is shown as it is and the cap still holds.
 */
export function quoted(value: string): string {
  let shown = '';
  // By code point, so that neither a surrogate pair nor an escape is cut in half.
  for (const character of value) {
    const piece = character === '%' ? '\\u0025' : escapeControlCharacters(character);
    if (shown.length + piece.length > MAX_ECHOED_LENGTH) return `"${shown}…"`;
    shown += piece;
  }
  return `"${shown}"`;
}

/**
 * Names such as event types, short enough to say whole in an error: those of the form
 * `prefix.name` grouped by prefix (`token.issued|revoked, app.secret_rotated|…`), the rest as they are.
 */
export function listByPrefix(values: readonly string[]): string {
  const groups = new Map<string, string[]>();
  for (const value of values) {
    const dot = value.indexOf('.');
    const [prefix, name] = dot === -1 ? [value, undefined] : [value.slice(0, dot), value.slice(dot + 1)];
    const group = groups.get(prefix) ?? [];
    if (name !== undefined) group.push(name);
    groups.set(prefix, group);
  }
  return [...groups].map(([prefix, names]) => (names.length === 0 ? prefix : `${prefix}.${names.join('|')}`)).join(', ');
}
