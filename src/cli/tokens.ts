import { NO_CLIENT } from '../events/event.js';
import type { PrincipalKind } from '../principal.js';
import type { Tessera } from '../tessera.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const TOKENS_FLAGS: FlagSpec = { kind: true };

const USAGE = 'usage: tessera tokens revoke-all APP_ID [--kind admin|anonymous] [--json]';

/** `tessera tokens revoke-all APP_ID`: revokes every token of an app, or of one kind. */
export async function runTokensCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, appId, ...extra] = command.positionals;
  if (verb !== 'revoke-all' || appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const kindFlag = stringFlag(command, 'kind');
  if (kindFlag !== undefined && kindFlag !== 'admin' && kindFlag !== 'anonymous') throw new UsageError(USAGE);
  const kind = kindFlag as PrincipalKind | undefined;
  await tessera.apps.show(appId); // APP_NOT_FOUND for an unknown app
  const revoked = await tessera.tokens.revokeAll(appId, kind, NO_CLIENT, 'operator');
  out.result({ appId, kind: kind ?? 'all', revoked }, () => `Revoked ${revoked} ${kind ?? ''}${kind === undefined ? '' : ' '}token(s) of app ${appId}.`);
}
