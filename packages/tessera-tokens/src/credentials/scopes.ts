/**
 * Scopes of a credential (the contract, "Credentials"). Tessera's own admin features each need one
 * of `BUILT_IN_SCOPES`; an app may also name scopes of its own for the rest of the backend, which
 * Tessera carries without knowing what they mean. A name in the namespace of a built-in scope
 * (`tokens:…`) must be a built-in one: `tokens:delete` is a typo or a guess, never an app's own, so
 * it is refused as unknown instead of being carried as a scope that grants nothing.
 */
export const BUILT_IN_SCOPES = [
  'app:read',
  'configuration:read',
  'configuration:write',
  'events:read',
  'tokens:introspect',
  'tokens:revoke',
  'credentials:manage',
  'webhooks:manage',
] as const;
export type BuiltInScope = (typeof BUILT_IN_SCOPES)[number];

export const MAX_SCOPE_LENGTH = 64;
/** Scopes a credential may have, and a token request may name: every input is size-limited. */
export const MAX_SCOPES = 32;
const SCOPE_PATTERN = /^[a-z][a-z0-9_.:-]*$/;
const BUILT_IN: ReadonlySet<string> = new Set(BUILT_IN_SCOPES);
const RESERVED_NAMESPACES: readonly string[] = [...new Set(BUILT_IN_SCOPES.map((scope) => scope.slice(0, scope.indexOf(':') + 1)))];

export type ScopeProblem = { kind: 'malformed' | 'unknown'; scope: string } | { kind: 'too many'; count: number };

/** The scopes, checked and in a canonical order (sorted, no repeats), or the first problem. */
export type CheckedScopes = { scopes: string[] } | { problem: ScopeProblem };

export function checkScopes(names: readonly string[]): CheckedScopes {
  const unique = [...new Set(names)].sort();
  if (unique.length > MAX_SCOPES) return { problem: { kind: 'too many', count: unique.length } };
  for (const scope of unique) {
    if (scope.length > MAX_SCOPE_LENGTH || !SCOPE_PATTERN.test(scope)) return { problem: { kind: 'malformed', scope } };
    if (!BUILT_IN.has(scope) && RESERVED_NAMESPACES.some((namespace) => scope.startsWith(namespace))) {
      return { problem: { kind: 'unknown', scope } };
    }
  }
  return { scopes: unique };
}

/**
 * A token request's `scope` parameter (RFC 6749 §3.3: names separated by single spaces), narrowed
 * to what the credential allows: the scopes asked for, or all the credential's when the request
 * names none. Asking for one the credential does not have is a problem of its own (`invalid_scope`).
 */
export function narrowScopes(
  allowed: readonly string[],
  parameter: string | undefined,
): { scopes: string[] } | { problem: ScopeProblem | { kind: 'not allowed'; scope: string } } {
  if (parameter === undefined) return { scopes: [...allowed] };
  const names = parameter.split(' ');
  if (names.length > MAX_SCOPES) return { problem: { kind: 'too many', count: names.length } };
  const checked = checkScopes(names);
  if ('problem' in checked) return checked;
  const granted = new Set(allowed);
  const missing = checked.scopes.find((scope) => !granted.has(scope));
  return missing === undefined ? checked : { problem: { kind: 'not allowed', scope: missing } };
}

export function isBuiltInScope(scope: string): scope is BuiltInScope {
  return BUILT_IN.has(scope);
}

/** The scope parameter's form of each list seen (RFC 6749 §3.3): a token's list is shared by every check of it. */
const parameters = new WeakMap<readonly string[], string>();

/** `scopes` separated by spaces, as a token answer, whoami, introspection and `X-Tessera-Scope` give them; made once a list. */
export function scopeParameter(scopes: readonly string[]): string {
  let parameter = parameters.get(scopes);
  if (parameter === undefined) {
    parameter = scopes.join(' ');
    parameters.set(scopes, parameter);
  }
  return parameter;
}
