import type { SigningKeyDescription } from 'tessera-tokens/internal/signing-keys/key.js';
import { JWT_ALGORITHMS, type JwtAlgorithm } from 'tessera-tokens/internal/jwt/access-token.js';
import type { JwtKeyDescription } from '../jwt/keys.js';
import type { Tessera } from '../tessera.js';
import { UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const KEYS_FLAGS: FlagSpec = { jwt: false, algorithm: true, ahead: true };

const USAGE =
  'usage: tessera keys list|rotate [--json], or tessera keys retire KEY_ID [--json]\n' +
  '       tessera keys list --jwt [--json]\n' +
  '       tessera keys rotate --jwt [--algorithm EdDSA|ES256] [--ahead SECONDS] [--json]\n' +
  '       tessera keys retire --jwt KID [--json]';

/**
 * `tessera keys list|rotate|retire KEY_ID`: the keys that sign anonymous tokens. Rotate adds a key
 * that signs from now on (older keys still verify); retire ends every token a key signed.
 */
export async function runKeysCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, id, ...extra] = command.positionals;
  if (extra.length > 0) throw new UsageError(USAGE);
  if (command.flags.jwt === true) return runJwtKeysCommand(tessera, command, out);
  if (command.flags.algorithm !== undefined || command.flags.ahead !== undefined)
    throw new UsageError(`--algorithm and --ahead are for JWT keys (--jwt)\n${USAGE}`);
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

/**
 * `tessera keys list|rotate|retire --jwt`: the keys of JWT access tokens. Rotate publishes a key that
 * signs `--ahead` seconds later (an hour by default: verifiers caching the JWKS learn it first); the
 * keys before it stay published until every token they signed has expired. Retire ends a key's
 * publication at once: every token it signed is refused.
 */
async function runJwtKeysCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, kid] = command.positionals;
  const { algorithm, ahead } = command.flags;
  if (verb !== 'rotate' && (algorithm !== undefined || ahead !== undefined)) throw new UsageError(USAGE);
  switch (verb) {
    case 'list': {
      if (kid !== undefined) throw new UsageError(USAGE);
      const keys = await tessera.jwt.keys.list();
      return out.result(keys, () =>
        keys.length === 0
          ? 'No JWT key yet: the first is made when an app first issues a JWT access token, or by tessera keys rotate --jwt.'
          : jwtTable(keys),
      );
    }
    case 'rotate': {
      if (kid !== undefined) throw new UsageError(USAGE);
      if (algorithm !== undefined && !(JWT_ALGORITHMS as readonly unknown[]).includes(algorithm))
        throw new UsageError(`--algorithm is one of: ${JWT_ALGORITHMS.join(', ')}`);
      if (ahead !== undefined && (typeof ahead !== 'string' || !/^[0-9]{1,7}$/.test(ahead)))
        throw new UsageError('--ahead is a whole number of seconds (0 to 9999999)');
      const keys = await tessera.jwt.keys.rotate({
        ...(algorithm === undefined ? {} : { algorithm: algorithm as JwtAlgorithm }),
        ...(ahead === undefined ? {} : { aheadMs: Number(ahead) * 1000 }),
      });
      const pending = keys.filter((key) => key.state === 'pending').at(-1);
      const signing = keys.find((key) => key.state === 'signing');
      return out.result(keys, () => [
        pending === undefined
          ? `JWT key ${signing?.kid} signs from now on; the keys before it stay published until their tokens expire.`
          : `JWT key ${pending.kid} is published and signs from ${pending.signsFrom}; the keys before it stay published until their tokens expire.`,
        ...jwtTable(keys),
      ]);
    }
    case 'retire': {
      if (kid === undefined) throw new UsageError(USAGE);
      const keys = await tessera.jwt.keys.retire(kid);
      return out.result(keys, () => [`JWT key ${kid} is retired: every token it signed is refused.`, ...jwtTable(keys)]);
    }
    default:
      throw new UsageError(USAGE);
  }
}

function jwtTable(keys: JwtKeyDescription[]): string[] {
  return keys.map((key) =>
    [
      key.kid,
      key.algorithm.padEnd(5),
      key.state.padEnd(9),
      `signs from ${key.signsFrom}`,
      key.publishedUntil === null ? '' : `published until ${key.publishedUntil}`,
    ]
      .join('  ')
      .trimEnd(),
  );
}

function table(keys: SigningKeyDescription[]): string[] {
  return keys.map((key) =>
    [String(key.id).padStart(5), key.state.padEnd(9), `created ${key.createdAt}`, key.retiredAt === null ? '' : `retired ${key.retiredAt}`]
      .join('  ')
      .trimEnd(),
  );
}
