import type { Store, StoreTables } from './store.js';

/** The parts of the store whose calls the metrics time and the traces show, and their operations' prefixes. */
export const STORE_PARTS = {
  apps: 'apps',
  tokens: 'tokens',
  credentials: 'credentials',
  revokedTokens: 'revoked_tokens',
  signingKeys: 'keys',
  jwtKeys: 'jwt_keys',
  statusLists: 'status_lists',
  events: 'events',
  developers: 'developers',
  onceClaims: 'once_claims',
  attestation: 'attestation',
  webhooks: 'webhooks',
  mail: 'mail',
  upgrade: 'upgrade',
} as const satisfies Partial<Record<keyof Store, string>>;

/** The parts of a transaction's tables, timed and traced as the store's own parts are. */
const TABLE_PARTS = [
  'apps',
  'tokens',
  'credentials',
  'events',
  'developers',
  'onceClaims',
  'attestation',
  'webhooks',
  'mail',
] as const satisfies readonly (keyof StoreTables & keyof typeof STORE_PARTS)[];

/**
 * `tables` with each part replaced by `wrap` of it, made when the part is first asked for (a
 * transaction uses two or three): what the metrics and the traces give a transaction's work, so that
 * its calls count under the same operations as the store's own (`credentials.insert`).
 */
export function wrappedTables(tables: StoreTables, wrap: (part: (typeof TABLE_PARTS)[number], target: object) => object): StoreTables {
  const wrapped: Record<string, object> = {};
  const made = new Map<string, object>();
  for (const part of TABLE_PARTS) {
    Object.defineProperty(wrapped, part, {
      enumerable: true,
      get: () => {
        let found = made.get(part);
        if (found === undefined) {
          found = wrap(part, tables[part]);
          made.set(part, found);
        }
        return found;
      },
    });
  }
  return wrapped as unknown as StoreTables;
}

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
