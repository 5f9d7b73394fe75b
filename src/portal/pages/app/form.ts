import { MAX_ORIGIN_LENGTH, parseAllowedOrigins } from 'tessera-tokens/internal/apps/origins.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

// The overview's one form, the quickstarts' "Your page's origin", read from what the browser sent.

/** The origin as typed, cut short: shown again beside a mistake. */
export function typedOriginOf(body: URLSearchParams): string {
  return (body.get('origin') ?? '').slice(0, MAX_ORIGIN_LENGTH + 1);
}

/** The one origin typed, canonical (as browsers send it), or `invalid_request` saying what an origin is. */
export function originOf(typed: string): string {
  const trimmed = typed.trim();
  if (trimmed === '') throw new TesseraError('invalid_request', "Type your page's origin, such as http://localhost:5173.");
  return parseAllowedOrigins([trimmed], "Your page's origin", () => "Your page's origin")[0]!;
}
