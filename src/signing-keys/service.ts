import type { Clock } from 'tessera-tokens/internal/clock.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import {
  describeKeys,
  generateKeySecret,
  MAX_KEY_ID,
  signingKeyOf,
  type SigningKeyDescription,
} from 'tessera-tokens/internal/signing-keys/key.js';
import type { SigningKeyStore } from './store.js';

/**
 * The operator's management of the keys that sign anonymous tokens (`tessera keys`). Rotating adds
 * a key that signs from then on, while the older ones still verify the tokens they signed; retiring
 * a key ends every token it signed, on every instance within a second.
 */
export class SigningKeyService {
  constructor(
    private readonly store: SigningKeyStore,
    private readonly clock: Clock,
    /** Called after a change, so that this process's keyring reads the keys again at once. */
    private readonly onChange: () => void = () => {},
  ) {}

  async list(): Promise<SigningKeyDescription[]> {
    return describeKeys(await this.store.list());
  }

  /** Adds a key, which signs every new anonymous token from now on; returns every key as it now is. */
  async rotate(): Promise<SigningKeyDescription[]> {
    const keys = await this.store.list();
    if (keys.some((key) => key.id >= MAX_KEY_ID)) {
      throw new TesseraError('invalid_request', `Key ids are exhausted (${MAX_KEY_ID}); no further key can be added.`);
    }
    await this.store.add(generateKeySecret(), this.clock.now());
    this.onChange();
    return this.list();
  }

  /**
   * Retires a key that no longer signs: every anonymous token it signed is refused from now on. The
   * signing key cannot be retired; rotate first.
   */
  async retire(id: number): Promise<SigningKeyDescription[]> {
    const keys = await this.store.list();
    const key = keys.find((candidate) => candidate.id === id);
    if (key === undefined || key.retiredAt !== null)
      throw new TesseraError('NOT_FOUND', `There is no active key ${id}; tessera keys list shows them.`);
    if (signingKeyOf(keys) === key) {
      throw new TesseraError('invalid_request', `Key ${id} signs new tokens; rotate first (tessera keys rotate), then retire it.`);
    }
    if ((await this.store.retire(id, this.clock.now())) === undefined) {
      throw new TesseraError('NOT_FOUND', `There is no active key ${id}; tessera keys list shows them.`);
    }
    this.onChange();
    return this.list();
  }
}
