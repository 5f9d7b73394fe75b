import type { Store } from './store.js';

/** The parts of the store whose calls the metrics time and the traces show, and their operations' prefixes. */
export const STORE_PARTS = {
  apps: 'apps',
  tokens: 'tokens',
  credentials: 'credentials',
  revokedTokens: 'revoked_tokens',
  keys: 'keys',
  events: 'events',
  developers: 'developers',
  onceClaims: 'once_claims',
  upgrade: 'upgrade',
} as const satisfies Partial<Record<keyof Store, string>>;

/** The functions of an object, own or inherited from its class. */
export function methodNames(target: Record<string, unknown>): string[] {
  const names = new Set<string>();
  for (
    let object: object | null = target;
    object !== null && object !== Object.prototype;
    object = Object.getPrototypeOf(object) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(object)) {
      if (name !== 'constructor' && typeof target[name] === 'function') names.add(name);
    }
  }
  return [...names];
}
