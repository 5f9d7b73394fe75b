import { TesseraError } from '../errors.js';

/**
 * A header's value from Node's `rawHeaders` (name, value, name, value, …), undefined when it is
 * absent or empty; `400 invalid_request` when it is sent more than once (`singleHeader`,
 * http/headers.ts, says why). `name` is lower case.
 */
export function singleRawHeader(raw: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let index = 0; index < raw.length; index += 2) {
    const header = raw[index]!;
    if (header.length !== name.length || header.toLowerCase() !== name) continue;
    if (value !== undefined) throw new TesseraError('invalid_request', `The ${header} header is sent more than once.`);
    value = raw[index + 1]!;
  }
  return value === '' ? undefined : value;
}
