import type { DebugTokenDescription } from '../attestation/debug-tokens.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const ATTESTATION_FLAGS: FlagSpec = { name: true };

const USAGE =
  'usage: tessera attestation debug-token create APP_ID --name NAME [--json]\n' +
  '       tessera attestation debug-token list APP_ID [--json]\n' +
  '       tessera attestation debug-token revoke APP_ID DEBUG_TOKEN_ID [--json]';

/** `tessera attestation debug-token <verb>`: the debug tokens that attest an app's anonymous token requests from CI and emulators. */
export async function runAttestationCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [noun, verb, appId, id, ...extra] = command.positionals;
  if (noun !== 'debug-token' || appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const name = stringFlag(command, 'name');
  if (name !== undefined && verb !== 'create') throw new UsageError('--name is for tessera attestation debug-token create');
  const { debugTokens } = tessera.attestation;
  switch (verb) {
    case 'create': {
      if (name === undefined || id !== undefined) throw new UsageError(USAGE);
      const created = await debugTokens.create(appId, name, OPERATOR);
      return out.result(created, () => [
        `Debug token "${created.name}" (${created.id}) of app ${appId}:`,
        `  ${created.token}`,
        'Shown this once. Where the app runs in CI or an emulator, send it with anonymous token requests as',
        `  X-Tessera-Attestation: debug.${created.token}`,
        `Revoke it with: tessera attestation debug-token revoke ${appId} ${created.id}`,
      ]);
    }
    case 'list': {
      if (id !== undefined) throw new UsageError(USAGE);
      const listed = await debugTokens.list(appId, OPERATOR);
      return out.result(listed, () => (listed.length === 0 ? `App ${appId} has no debug tokens.` : listed.map(oneLine)));
    }
    case 'revoke': {
      if (id === undefined) throw new UsageError(USAGE);
      const revoked = await debugTokens.revoke(appId, id, OPERATOR);
      return out.result(revoked, () => `Revoked debug token "${revoked.name}" (${revoked.id}): it attests nothing from now on.`);
    }
    default:
      throw new UsageError(USAGE);
  }
}

function oneLine(token: DebugTokenDescription): string {
  return `${token.id}  ${token.createdAt}  last used ${token.lastUsedAt ?? 'never'}  ${token.name}`;
}
