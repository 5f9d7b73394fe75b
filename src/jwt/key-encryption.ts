import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_ENCRYPTION_KEY_BYTES = 32;

/**
 * The private JWT keys' and the webhooks' secrets' encryption at rest: AES-256-GCM under a key that is never in the database
 * (`KEY_ENCRYPTION_KEY`, or beside an SQLite file), with the key's (or webhook's) id as associated data (a
 * ciphertext moved to another row does not decrypt). A database dump holds no usable private key.
 * While that key is replaced, the one before it (`KEY_ENCRYPTION_KEY_PREVIOUS`) still decrypts what
 * it encrypted; what is encrypted now is under the current one.
 */
export class KeyEncryption {
  readonly #keys: readonly Buffer[];

  constructor(key: Buffer, previous?: Buffer) {
    this.#keys = previous === undefined ? [key] : [key, previous];
    for (const each of this.#keys) {
      if (each.length !== KEY_ENCRYPTION_KEY_BYTES) throw new Error(`a key encryption key is ${KEY_ENCRYPTION_KEY_BYTES} bytes`);
    }
  }

  encrypt(plaintext: Buffer, kid: string): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys[0]!, nonce).setAAD(Buffer.from(kid));
    const encrypted = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([nonce, encrypted, cipher.getAuthTag()]);
  }

  /** `what`: the thing encrypted, as the 503 names it when no key decrypts it. */
  decrypt(sealed: Buffer, kid: string, what = `The JWT key ${kid}`): Buffer {
    for (const key of this.#keys) {
      const opened = open(key, sealed, kid);
      if (opened !== undefined) return opened;
    }
    throw new TesseraError(
      'SERVICE_UNAVAILABLE',
      `${what} does not decrypt with this instance's KEY_ENCRYPTION_KEY` +
        `${this.#keys.length > 1 ? ' nor its KEY_ENCRYPTION_KEY_PREVIOUS' : ''}: every instance needs the same one.`,
    );
  }
}

function open(key: Buffer, sealed: Buffer, kid: string): Buffer | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES)).setAAD(Buffer.from(kid));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}

/**
 * The key encryption key a process uses: `KEY_ENCRYPTION_KEY` when set; on an SQLite file without
 * it, one kept beside the file (`<file>.kek`, made on first use, readable by its owner only), so that
 * a laptop needs no setup and a copy of the database alone holds no usable private key; on
 * PostgreSQL without it, none (JWT access tokens then answer 503 until the operator sets it).
 */
export function resolveKeyEncryptionKey(configured: Buffer | undefined, databaseUrl: string | undefined): Buffer | undefined {
  if (configured !== undefined) return configured;
  const location = parseDatabaseUrl(databaseUrl);
  if (location.backend !== 'sqlite') return undefined;
  if (location.path === ':memory:') return randomBytes(KEY_ENCRYPTION_KEY_BYTES);
  const path = `${location.path}.kek`;
  try {
    writeFileSync(path, randomBytes(KEY_ENCRYPTION_KEY_BYTES).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url');
  if (key.length !== KEY_ENCRYPTION_KEY_BYTES)
    throw new Error(`${path} does not hold a key encryption key (${KEY_ENCRYPTION_KEY_BYTES} bytes, base64url)`);
  return key;
}
