import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { anonymousRequest } from '../../src/request-context.js';
import type { Tessera } from '../../src/tessera.js';

/**
 * `count` admin-token attempts on `app`, all wrong but the one at `rightAt`, started in one turn of
 * the event loop: what a burst of requests that waited for one shared read of the app amounts to.
 * Attempt `i` comes from `addressOf(i)` (by default, all from one unknown address).
 * Resolves with each attempt's outcome, in order: `token`, or the error code.
 */
export function adminBurst(
  tessera: Tessera,
  app: AppRecord,
  clientSecret: string,
  count: number,
  rightAt: number,
  addressOf: (i: number) => string | null = () => null,
): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      tessera.issuer
        .issue(
          app,
          { credentials: { clientId: app.clientId, clientSecret: i === rightAt ? clientSecret : `wrong-secret-${i}` }, expiresAt: null },
          anonymousRequest(addressOf(i)),
        )
        .then(
          () => 'token',
          (error: unknown) => (isTesseraError(error) ? error.code : String(error)),
        ),
    ),
  );
}
