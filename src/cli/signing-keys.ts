import type { SigningKeyDescription } from 'tessera-tokens/internal/signing-keys/key.js';
import type { Tessera } from '../tessera.js';
import { UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const KEYS_FLAGS: FlagSpec = {};

const USAGE = 'usage: tessera keys list|rotate [--json], or tessera keys retire KEY_ID [--json]';

/**
 * `tessera keys list|rotate|retire KEY_ID`: the keys that sign anonymous tokens. Rotate adds a key
 * that signs from now on (older keys still verify); retire ends every token a key signed.
 */
export async function runKeysCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, id, ...extra] = command.positionals;
  if (extra.length > 0) throw new UsageError(USAGE);
  switch (verb) {
    case 'list': {
      if (id !== undefined) throw new UsageError(USAGE);
      const keys = await tessera.signingKeys.list();
      return out.result(keys, () => table(keys));
    }
    case 'rotate': {
      if (id !== undefined) throw new UsageError(USAGE);
      const keys = await tessera.signingKeys.rotate();
      const signing = keys.find((key) => key.state === 'signing');
      return out.result(keys, () => [
        `Key ${signing?.id} signs new anonymous tokens; the older keys still verify theirs until retired (tessera keys retire KEY_ID).`,
        ...table(keys),
      ]);
    }
    case 'retire': {
      if (id === undefined || !/^[1-9][0-9]{0,4}$/.test(id)) throw new UsageError(USAGE);
      const keys = await tessera.signingKeys.retire(Number(id));
      return out.result(keys, () => [`Key ${id} is retired: every anonymous token it signed is refused.`, ...table(keys)]);
    }
    default:
      throw new UsageError(USAGE);
  }
}

function table(keys: SigningKeyDescription[]): string[] {
  return keys.map((key) =>
    [String(key.id).padStart(5), key.state.padEnd(9), `created ${key.createdAt}`, key.retiredAt === null ? '' : `retired ${key.retiredAt}`]
      .join('  ')
      .trimEnd(),
  );
}
