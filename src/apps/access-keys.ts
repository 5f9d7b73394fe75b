import { randomHex, randomUUID } from 'tessera-tokens/internal/crypto.js';
import { generateClientSecret } from './secret-format.js';

/** The four access keys of a new app, plus its admin id. */
export interface AppAccessKeys {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  adminId: string;
}

/**
 * AppID: 16 hex characters (64 bits); ClientID and AppKey: 32 hex characters (128 bits);
 * ClientSecret: `tessera_` and 49 base62 characters (256 bits and a checksum: `secret-format.ts`).
 * All URL-safe; AppID and ClientID differ in length,
 * so they can never be equal.
 */
export function generateAppAccessKeys(): AppAccessKeys {
  return {
    appId: randomHex(8),
    appKey: randomHex(16),
    clientId: randomHex(16),
    clientSecret: generateClientSecret(),
    adminId: randomUUID(),
  };
}
