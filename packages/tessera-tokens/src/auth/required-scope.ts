import { checkScopes } from '../credentials/scopes.js';
import { adminRequired, insufficientScope } from '../error-catalogue.js';
import type { TesseraError } from '../errors.js';
import type { Principal } from '../principal.js';

/**
 * What the middleware's `requireScope` checks of a principal, for a feature of the rest of the
 * backend that needs `scope`: an admin token of the app's own ClientID may do everything; one with
 * scopes (from a credential) only what they name (`403 INSUFFICIENT_SCOPE`); anything else is not
 * an admin (`403 ADMIN_REQUIRED`). Undefined when the principal may.
 */
export function scopeRefusal(principal: Principal | undefined, scope: string): TesseraError | undefined {
  if (principal?.kind !== 'admin') return adminRequired();
  if (principal.scopes === null || principal.scopes.includes(scope)) return undefined;
  return insufficientScope(scope);
}

/** The scope a `requireScope` is set up with, checked once, when the service starts: a typo must not guard a route with a scope nobody can have. */
export function checkedRequiredScope(scope: string): string {
  const checked = checkScopes([scope]);
  if ('problem' in checked)
    throw new Error(`requireScope: "${scope}" is not a scope (lower case, [a-z][a-z0-9_.:-]*, at most 64 characters)`);
  return scope;
}
